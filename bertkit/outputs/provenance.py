"""What a run needs to be repeated exactly: package versions, git commit, device, seed, command.

Written by the training loop as ``environment.json`` in every run directory, beside the resolved
``config.yaml``.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("bertkit", "torch", "transformers", "tokenizers", "datasets", "accelerate",
            "seqeval", "scikit-learn", "numpy", "safetensors", "sentencepiece", "conllu")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution in ``names`` (None when not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit(path: Path | None = None) -> dict[str, Any] | None:
    """The commit of the git checkout holding bertkit (or ``path``) and whether it has local
    changes; None outside a checkout or without git."""
    where = path or Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                                text=True, timeout=5)
        if commit.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def device_record(device: Any) -> dict[str, Any]:
    """The device a run used: type, and for CUDA the GPU name, count and CUDA version."""
    import torch

    rec: dict[str, Any] = {"device": str(device), "cpu_threads": torch.get_num_threads()}
    if getattr(device, "type", str(device)).startswith("cuda") and torch.cuda.is_available():
        rec.update(gpu=torch.cuda.get_device_name(device), gpus=torch.cuda.device_count(),
                   cuda=torch.version.cuda)
    return rec


def run_environment(device: Any, seed: int | None, world_size: int = 1) -> dict[str, Any]:
    """Everything :mod:`bertkit.outputs.provenance` records for a run, as a JSON-ready dict."""
    return {
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "seed": seed,
        "world_size": world_size,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
        "git": git_commit(),
        **device_record(device),
    }


def write_run_environment(env_file: Path, runtime: Any, seed: int | None, world_size: int = 1,
                          resume: bool = False) -> None:
    """Write ``environment.json``: :func:`run_environment` plus the run's ``precision`` and
    ``precision_reason`` (``runtime``: a :class:`bertkit.training.devices.Runtime`). On
    ``resume`` the original record is kept and this start is appended to its ``resumed`` list."""
    import json

    from bertkit.io import write_json

    env = {**run_environment(runtime.device, seed, world_size),
           "precision": runtime.precision, "precision_reason": runtime.reason}
    if resume and env_file.is_file():
        try:
            first = json.loads(env_file.read_text(encoding="utf-8"))
            env = {**first, "resumed": [*first.get("resumed", []), env]}
        except (OSError, ValueError, AttributeError):
            pass
    write_json(env_file, env)
