"""Checkpoints for exact resume, written atomically (to a temporary folder, then renamed).

``checkpoints/step_N/`` holds ``model.pt`` (weights) and ``state.pt`` (optimiser, scheduler, AMP
scaler, RNG states of Python/NumPy/torch/CUDA, and the loop position: step, epoch, batch in epoch,
best metric). A run killed at any moment leaves either the old or the new checkpoint, never half
of one.
"""

from __future__ import annotations

import random
import re
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bertkit.io import atomic_path

_STEP = re.compile(r"^step_(\d+)$")


def rng_state() -> dict[str, Any]:
    """The random generator states needed to continue a run bit for bit."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(directory: Path, step: int, model_state: dict[str, torch.Tensor],
                    state: dict[str, Any], keep: int) -> Path:
    """Write ``directory/step_<step>`` atomically and prune step checkpoints beyond ``keep``.

    Args:
        model_state: the whole model's state dict (gathered first under FSDP).
        state: optimiser/scheduler/scaler state dicts and loop position (see module docstring).
        keep: how many step checkpoints to keep, newest first (at least 1 is always kept).
    """
    target = directory / f"step_{step}"
    with atomic_path(target) as tmp:
        tmp.mkdir()
        torch.save(model_state, tmp / "model.pt")
        torch.save({**state, "rng": rng_state()}, tmp / "state.pt")
    for old in list_checkpoints(directory)[:-max(keep, 1)]:
        # renamed first, so a kill mid-deletion never leaves a half-deleted step_N behind
        trash = old.with_name(f".{old.name}.deleting")
        try:
            os.replace(old, trash)
        except OSError:
            continue
        shutil.rmtree(trash, ignore_errors=True)
    for leftover in directory.glob(".step_*.deleting"):  # from a run killed while deleting
        shutil.rmtree(leftover, ignore_errors=True)
    return target


def list_checkpoints(directory: Path) -> list[Path]:
    """Complete step checkpoints in ``directory``, oldest first."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir()
             if (m := _STEP.match(p.name)) and (p / "state.pt").is_file() and (p / "model.pt").is_file()]
    return [p for _, p in sorted(found)]


def load_checkpoint(path: Path, model: torch.nn.Module) -> dict[str, Any]:
    """Load weights into ``model`` and return the saved state (RNG states not yet applied)."""
    model.load_state_dict(torch.load(path / "model.pt", map_location="cpu", weights_only=True))
    return torch.load(path / "state.pt", map_location="cpu", weights_only=False)
