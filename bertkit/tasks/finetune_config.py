"""The base of every ``finetune`` task's settings: the checks all of them share."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from bertkit.settings.options import Option, option
from bertkit.training.config import TrainConfig

MODEL_HELP = "Encoder directory or hub id."
MODEL_SHOWN = "the packaged MiniLM-L6-H384 encoder"


def model_option(help: str = MODEL_HELP):
    """The ``--model``/``-m`` field of a task's settings (None: the packaged encoder)."""
    return option(None, help=help, flags=("--model", "-m"), shown=MODEL_SHOWN)


def data_option(default: str, help: str):
    """The ``--data``/``-d`` field of a task's settings (``help`` may name ``{sets}``)."""
    return option(default, help=help, flags=("--data", "-d"))


def eval_batch_option(default: int, unit: str):
    """The ``--eval-batch-size`` field: ``unit`` (``Windows``) per batch when evaluating."""
    return option(default, min=1, help=f"{unit} per batch when evaluating.")


def max_train_option(unit: str):
    """The ``--max-train-samples`` field: the first N training ``unit`` (``sentences``)."""
    return option(None, min=1, help=f"Use only the first N training {unit}.")


def skip_bad_lines_option():
    """The ``--skip-bad-lines`` field of a line-per-example reader: skip and count unreadable
    lines instead of stopping before training."""
    return option(False, flags=("--skip-bad-lines",), help="Skip and count unreadable lines "
                  "instead of stopping before training.")


def max_eval_option(unit: str):
    """The ``--max-eval-samples`` field: the first N dev and test ``unit`` (``sentences``)."""
    return option(None, min=1, help=f"Use only the first N dev and test {unit}.")


def evaluate_data_option(help: str) -> Option:
    """``evaluate``'s required ``--data``/``-d``: a registered set or a directory of split files
    (``help`` may name ``{sets}``)."""
    return Option(help, ("--data", "-d"), name="data", type=str, default=...)


def predictions_option(help: str) -> Option:
    """``evaluate``'s ``--predictions``: also write the split's predictions to this file."""
    return Option(help, ("--predictions",), name="predictions", type=Path)


def input_option(help: str) -> Option:
    """``predict``'s required ``--input``/``-i``: the file to predict on (``help``: its forms)."""
    return Option(help, ("--input", "-i"), name="input", type=Path, default=...)


@dataclass
class FinetuneConfig(TrainConfig):
    """Training-loop settings plus the checks every fine-tuning task needs.

    A subclass declares ``max_length``, ``eval_batch_size``, ``max_train_samples`` and
    ``max_eval_samples`` (with its own defaults) and its own checks in :meth:`task_checks`.

    Attributes:
        split_from_dev: train on the dev file less this held-out fraction (every
            ``1/split_from_dev``-th example, the held-out part being dev for model selection), for
            sets released with dev and test only; None: use the train file (a registered set
            without one defaults to 0.1). See :func:`bertkit.tasks.driver.split_from_dev`.
        seeds: run once per seed (``"1,2,3"``) in ``seed-<N>/`` sub-folders and summarise mean,
            standard deviation and 95% interval in ``summary.json``; None: one run with ``seed``.
    """

    split_from_dev: float | None = option(
        None, help="Train on the dev file less this held-out fraction (every 1/F-th example, used "
        "as dev for model selection), for sets with only dev and test files; recorded in "
        "results.json.", shown="off; 0.1 for a registered set without train")
    seeds: str | None = option(
        None, help="Run once per seed (e.g. 1,2,3), each in OUTPUT/seed-N/, and write "
        "OUTPUT/summary.json with mean, standard deviation and 95% interval per metric (one after "
        "another under torchrun).")

    def task_checks(self) -> tuple:
        """The subclass's own ``(option name, ok, what it must be)`` checks (none here); a field
        declared with ``option(..., choices=...)`` needs none (:meth:`choice_checks`)."""
        return ()

    def choice_checks(self) -> tuple:
        """One check per field declared with ``choices`` (:func:`bertkit.settings.options.option`): the
        value is one of them. The command line checks them too, but settings also come from
        recipe files and Python, which it never sees."""
        checks = []
        for f in dataclasses.fields(self):
            opt = f.metadata.get("option")
            if opt is not None and opt.choices:
                value = getattr(self, f.name)
                checks.append((f.name, value in opt.choices, " or ".join(opt.choices)))
        return tuple(checks)

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
        self.require(self.choice_checks() + tuple(self.task_checks()) + (
            ("max_length", 8 <= self.max_length, "an integer >= 8"),
            ("eval_batch_size", self.eval_batch_size >= 1, "an integer >= 1"),
            ("max_train_samples", (self.max_train_samples or 1) >= 1, "an integer >= 1"),
            ("max_eval_samples", (self.max_eval_samples or 1) >= 1, "an integer >= 1"),
            ("split_from_dev", self.split_from_dev is None or 0 < self.split_from_dev < 1,
             "a fraction in (0, 1), e.g. 0.1")))
        from bertkit.tasks.driver import parse_seeds

        parse_seeds(self.seeds)
