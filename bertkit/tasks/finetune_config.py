"""The base of every ``finetune`` task's settings: the checks all of them share."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.training.config import TrainConfig


@dataclass
class FinetuneConfig(TrainConfig):
    """Training-loop settings plus the checks every fine-tuning task needs.

    A subclass declares ``max_length``, ``eval_batch_size``, ``max_train_samples`` and
    ``max_eval_samples`` (with its own defaults) and its own checks in :meth:`task_checks`.
    """

    def task_checks(self) -> tuple:
        """The subclass's own ``(option name, ok, what it must be)`` checks (none here)."""
        return ()

    def examples_trained(self, n_train: int, steps: int) -> int:
        """Training examples seen: ``n_train`` per epoch, or with ``max_steps`` the optimiser steps
        times the (global) batch and accumulation, at most ``n_train`` per started epoch."""
        if not self.max_steps:
            return n_train * self.epochs
        per_step = self.batch_size * self.gradient_accumulation
        per_epoch_steps = max(1, -(-n_train // per_step))
        full, rest = divmod(steps, per_epoch_steps)
        return full * n_train + min(rest * per_step, n_train)

    def validate(self) -> None:
        """Check every setting (see :meth:`TrainConfig.validate`) before anything is loaded.

        Raises:
            BertkitError: naming the option out of range.
        """
        super().validate()
        self.require(tuple(self.task_checks()) + (
            ("max_length", 8 <= self.max_length, "an integer >= 8"),
            ("eval_batch_size", self.eval_batch_size >= 1, "an integer >= 1"),
            ("max_train_samples", (self.max_train_samples or 1) >= 1, "an integer >= 1"),
            ("max_eval_samples", (self.max_eval_samples or 1) >= 1, "an integer >= 1")))
