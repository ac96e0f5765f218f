"""The training loop's state: :class:`TrainState` (a run's progress, saved in every checkpoint),
:class:`Parts` (what it trains with), :class:`Meter` (logging window and clocks) and
:class:`BatchOut` (one forward/backward pass). The steps that change them are in
:mod:`bertkit.training.loop`."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from bertkit.training.batches import TrainResult
from bertkit.training.config import TrainConfig
from bertkit.training.devices import Runtime
from bertkit.training.logging import MetricsLog
from bertkit.training.rundir import RunWriter


@dataclass
class TrainState:
    """A run's progress: everything :func:`train` changes as it goes, saved in each checkpoint.

    ``checkpoints/step_N/state.pt`` holds it as ``"position"`` (a plain dict, :meth:`position`;
    the same keys as before this class existed, so older checkpoints resume) beside the state
    of the parts it belongs with: ``"optimizer"``, ``"scheduler"``, ``"scaler"`` (AMP loss
    scale) and ``"rng"`` (Python/NumPy/torch/CUDA generator states, captured by
    :func:`~bertkit.training.checkpoint.save_checkpoint` and restored by :func:`resume`).

    Attributes:
        step: optimiser steps done.
        epoch: the epoch being trained (0-based; epochs before it are complete).
        batch: batches of ``epoch`` consumed (the data position a resume continues from).
        best_metric: the best value of the selection metric so far (None: no evaluation yet).
        best_epoch: 1-based epoch of that evaluation.
        best_index: its index in ``history``.
        history: every dev evaluation record, in order.
        train_seconds: seconds spent training (evaluation and checkpoint loading excluded).
        train_examples: examples trained on (all processes together).
        train_tokens: real (not padding) tokens trained on, all processes together: the
            x-axis of a learning curve (each ``eval`` record carries it).
        last_train: the newest training-loss record.
        skipped: batches skipped for a non-finite loss (``--skip-nonfinite`` counts them).
    """

    step: int = 0
    epoch: int = 0
    batch: int = 0
    best_metric: float | None = None
    best_epoch: int | None = None
    best_index: int | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    train_seconds: float = 0.0
    train_examples: int = 0
    train_tokens: int = 0
    last_train: dict[str, Any] | None = None
    skipped: int = 0

    def position(self) -> dict[str, Any]:
        """The state as the plain dict saved under ``"position"`` in ``state.pt``."""
        return dataclasses.asdict(self)

    @classmethod
    def from_position(cls, saved: dict[str, Any]) -> "TrainState":
        """Rebuild from a saved ``"position"``; keys a checkpoint lacks (``best_index``,
        ``last_train``, ``skipped`` in older ones) take their defaults, unknown keys are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in saved.items() if k in known})

    def count(self, out: "BatchOut") -> None:
        """Add a forward pass's examples and real tokens (host counts: no device read)."""
        self.train_examples += out.examples
        self.train_tokens += out.tokens

    def describe_resume(self) -> str:
        """The console line for a resume: ``resuming from checkpoint step 1,200 (epoch 2, ...)``."""
        return (f"resuming from checkpoint step {self.step:,} (epoch {self.epoch + 1}, "
                f"{self.train_tokens:,} tokens trained)")

    def result(self) -> TrainResult:
        """The :class:`TrainResult` a finished run returns."""
        return TrainResult(steps=self.step, history=self.history, best_epoch=self.best_epoch,
                           best_index=self.best_index, best_metric=self.best_metric,
                           train_seconds=self.train_seconds,
                           train_examples=self.train_examples, train_tokens=self.train_tokens,
                           last_train=self.last_train)


class Meter:
    """Running sums of the logged losses since the last record, and the clocks that time them.

    The losses stay on the device: :meth:`add` keeps each batch's ``[K]`` loss tensor, and the
    host reads them in ONE transfer when a record or a progress line is due (:meth:`settle`),
    never per micro-batch (a read per batch stalls a GPU until the step's kernels finish).
    ``step_bad`` is a device flag, 1.0 when a batch of the current optimiser step had a
    non-finite loss: :func:`~bertkit.training.loop.optimizer_step` hands it to the fused AdamW
    kernel as ``found_inf``, which then leaves weights and moments unchanged (the skip happens
    on the device; the host learns of it, counts and names the batch at the next read).

    ``train_start`` marks the start of uncounted training time (moved on by :meth:`bank`);
    ``window_start`` the start of the throughput window (moved on by :meth:`flush`/:meth:`restart`).
    """

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.batches = self.examples = self.tokens = 0
        self.train_start = self.window_start = time.perf_counter()
        self.source_stats = None  # a BatchSource's ``stats()`` (e.g. data wait), in each record
        self.pending: list[tuple[int, int, int, list[str], torch.Tensor, int, int]] = []
        self.step_bad: torch.Tensor | None = None  # device flag for the current optimiser step
        self.on_nonfinite = None  # called as f(epoch, index, step, values, examples, tokens)

    def add(self, out: "BatchOut", epoch: int = 0, index: int = 0, step: int = 0) -> None:
        """Count batch ``index`` of ``epoch``, trained for optimiser step ``step`` (its global
        mean losses, examples and real tokens); the losses stay on the device until :meth:`settle`."""
        values = out.tensor
        self.pending.append((epoch, index, step, list(out.names), values, out.examples,
                             out.tokens))
        bad = (~torch.isfinite(values).all()).float()
        self.step_bad = bad if self.step_bad is None else torch.maximum(self.step_bad, bad)
        self.batches += 1
        self.examples += out.examples
        self.tokens += out.tokens

    def take_step_flag(self) -> torch.Tensor | None:
        """The current optimiser step's non-finite flag (device, 0-dim float), reset for the next."""
        flag, self.step_bad = self.step_bad, None
        return flag

    def settle(self) -> None:
        """Read the pending losses (one device-to-host transfer) into the sums; a batch with a
        non-finite loss is left out of them and handed to ``on_nonfinite``."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        rows = torch.stack([p[4].detach().float().reshape(-1) for p in pending]).cpu().tolist()
        for (epoch, index, step, names, _, examples, tokens), row in zip(pending, rows):
            if all(math.isfinite(v) for v in row):
                for key, value in zip(names, row):
                    self.sums[key] = self.sums.get(key, 0.0) + value
                continue
            self.batches -= 1
            self.examples -= examples
            self.tokens -= tokens
            if self.on_nonfinite is not None:
                self.on_nonfinite(epoch, index, step, dict(zip(names, row)), examples, tokens)

    def restart(self) -> None:
        """Restart both clocks (after an evaluation, at an epoch start)."""
        self.train_start = self.window_start = time.perf_counter()

    def bank(self, state: TrainState) -> None:
        """Add the training time since the last call to ``state.train_seconds`` (seconds)."""
        now = time.perf_counter()
        state.train_seconds += now - self.train_start
        self.train_start = now

    def means(self) -> dict[str, float]:
        """Mean of each logged loss over the batches since the last record (empty if none);
        reads the pending losses from the device (:meth:`settle`)."""
        self.settle()
        return {k: v / self.batches for k, v in self.sums.items()} if self.batches > 0 else {}

    def rate(self) -> float:
        """Examples per second in the current window."""
        return self.examples / max(time.perf_counter() - self.window_start, 1e-9)

    def flush(self, parts: "Parts", state: TrainState, epoch: int) -> dict[str, Any] | None:
        """Log the mean losses, learning rate and throughput (examples/s, tokens/s) of the
        batches since the last record as a ``train`` record; None if there were none."""
        self.settle()
        if self.batches <= 0:
            self.sums.clear()
            self.batches = self.examples = self.tokens = 0
            return None
        elapsed = max(time.perf_counter() - self.window_start, 1e-9)
        record = {"type": "train", "step": state.step, "epoch": epoch + 1,
                  **self.means(),
                  "lr": parts.scheduler.get_last_lr()[0], "examples_per_s": self.examples / elapsed,
                  "tokens_per_s": self.tokens / elapsed,
                  **(self.source_stats() if self.source_stats is not None else {})}
        parts.log.log(record)
        state.last_train = record
        self.sums.clear()
        self.batches = self.examples = self.tokens = 0
        self.window_start = time.perf_counter()
        return record


@dataclass
class Parts:
    """What a run trains with, built once by :func:`setup`.

    Attributes:
        model: the plain model (under FSDP a full CPU copy that rank 0 evaluates and saves).
        net: the module that trains: the FSDP-sharded model, DDP around ``model``, or ``model``.
        optimizer, scheduler, scaler: AdamW, its warm-up/decay schedule and the AMP loss scaler
            (enabled for fp16 only).
        runtime, cfg: device/precision and the loop settings.
        out: writes into the run directory on rank 0 only.
        n_epochs, total_steps: the plan (:func:`~bertkit.training.batches.plan_steps`).
        sharded: FSDP in a multi-process run.
        console: where messages go (None: nowhere).
        log: ``metrics.jsonl`` (set by :func:`train` once the resume point is known).
        meter: loss sums and clocks of the current logging window.
    """

    model: torch.nn.Module
    net: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    scaler: torch.amp.GradScaler
    runtime: Runtime
    cfg: TrainConfig
    out: RunWriter
    n_epochs: int
    total_steps: int
    sharded: bool = False
    console: Console | None = None
    log: MetricsLog = field(default_factory=lambda: MetricsLog(None))
    meter: Meter = field(default_factory=Meter)
    score_scale: float = 100.0  # dev scores shown as points: x100 for fractions, x1 for points
    hooks: list = field(default_factory=list)  # removed by finish() (training.masks)

    @property
    def ckpt_dir(self) -> Path:
        """``<run>/checkpoints``: ``step_N/`` folders and ``best.pt``."""
        return self.out.path("checkpoints")


@dataclass
class BatchOut:
    """One forward/backward pass: the global mean losses (``loss`` first, then ``*_loss``
    parts), the global batch's examples and real tokens, and whether any rank must stop.

    ``tensor`` holds the losses as a ``[K]`` device tensor in the order of ``names``; the loop
    never reads it per batch (see :class:`Meter`). ``values`` and ``finite`` read it (a device
    sync): for tests and callers outside the training step."""

    tensor: torch.Tensor | None
    names: tuple[str, ...]
    examples: int
    tokens: int
    stop: bool = False

    @classmethod
    def of(cls, values: dict[str, float], examples: int, tokens: int,
           stop: bool = False) -> "BatchOut":
        """A pass whose losses are already host numbers."""
        return cls(torch.tensor(list(values.values()), dtype=torch.float64), tuple(values),
                   examples, tokens, stop)

    @property
    def values(self) -> dict[str, float]:
        """The losses by name, as floats (reads the device)."""
        return dict(zip(self.names, self.tensor.detach().double().cpu().tolist()))

    @property
    def finite(self) -> bool:
        """False if any logged loss is NaN or infinite (then on every rank alike)."""
        return all(math.isfinite(v) for v in self.values.values())


def defined_score(metrics: dict[str, Any], name: str) -> float | None:
    """The dev score ``metrics[name]`` as a float, or None where it is undefined (None or NaN:
    a correlation over a dev split whose gold scores are all the same): such an evaluation
    chooses no epoch; with no defined score at all the run keeps its last weights.

    Raises:
        KeyError: ``metrics`` has no ``name``.
    """
    value = metrics[name]
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value
