"""What the loop consumes and returns: the :class:`BatchSource` protocol, the epoch/step plan,
batch sizes for throughput, and :class:`TrainResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

import torch

from bertkit.errors import BertkitError
from bertkit.training.config import TrainConfig


class BatchSource(Protocol):
    """Training batches for the loop. The order of epoch ``e`` must depend only on (seed, e), so
    that resuming at batch ``k`` of an epoch replays exactly the batches an uninterrupted run saw."""

    def num_batches(self, epoch: int) -> int:
        """Number of batches in ``epoch``."""

    def iter_batches(self, epoch: int, start: int = 0) -> Iterator[dict[str, torch.Tensor]]:
        """Batches ``start, start+1, ...`` of ``epoch``: dicts of CPU tensors, ``[B, T]`` first.

        Every process of a multi-process run gets the same global batches; the loop keeps each
        rank's slice of the rows. A source may also define ``describe(epoch, index) -> str``
        naming a batch's source lines, used when its loss is not finite, and ``stats() ->
        dict[str, float]``, added to each ``train`` record (e.g. the data wait of
        :class:`~bertkit.training.prefetch.Prefetcher`)."""


@dataclass
class TrainResult:
    """What a training run produced: optimiser steps, per-epoch dev metrics, the best epoch."""

    steps: int
    history: list[dict[str, Any]] = field(default_factory=list)
    best_epoch: int | None = None
    best_index: int | None = None
    best_metric: float | None = None
    train_seconds: float = 0.0
    train_examples: int = 0
    train_tokens: int = 0
    last_train: dict[str, Any] | None = None

    @property
    def best_record(self) -> dict[str, Any] | None:
        """The dev evaluation that selected the kept weights (None without selection). With
        ``eval_steps`` there are several per epoch, so ``history[best_epoch - 1]`` would be wrong."""
        if self.best_index is not None:
            return self.history[self.best_index]
        if self.best_epoch is None:  # a checkpoint from before best_index was recorded
            return None
        return next((r for r in reversed(self.history) if r.get("epoch") == self.best_epoch),
                    None)


class CountedBatch(dict):
    """A batch that carries its ``(examples, real tokens)`` as ``counts``, counted where it was
    built (:class:`~bertkit.training.prefetch.Prefetcher`'s worker), so the step reads no tensor
    for its throughput figures."""

    counts: tuple[int, int] | None = None


def batch_examples(batch: dict[str, torch.Tensor]) -> tuple[int, int]:
    """(examples, real tokens) of a batch, for throughput: its ``counts`` where it carries them
    (:class:`CountedBatch`), else read from its tensors (host memory: before the device copy)."""
    counts = getattr(batch, "counts", None)
    if counts is not None:
        return counts
    mask = batch.get("attention_mask")
    first = next(v for v in batch.values() if torch.is_tensor(v))
    return int(first.shape[0]), int(mask.sum()) if mask is not None else int(first.numel())


def plan_steps(data: BatchSource, cfg: TrainConfig) -> tuple[int, int]:
    """(epochs to run, total optimiser steps): ``cfg.epochs`` epochs, or with ``cfg.max_steps``
    as many epochs as those steps need (the last one cut short).

    Raises:
        BertkitError: the data gives no batch.
    """
    accum = cfg.gradient_accumulation
    if not cfg.max_steps:
        return cfg.epochs, sum(math.ceil(data.num_batches(e) / accum) for e in range(cfg.epochs))
    steps, epochs = 0, 0
    while steps < cfg.max_steps:
        n = data.num_batches(epochs)
        if n <= 0:
            raise BertkitError("the training data gives no batch", expected="more training data "
                                                                           "or a smaller batch size")
        steps += math.ceil(n / accum)
        epochs += 1
    return epochs, cfg.max_steps
