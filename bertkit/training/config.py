"""Options shared by every training command, named alike across them (``--lr``, ``--warmup``, ...)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bertkit.errors import BertkitError
from bertkit.training.devices import PRECISIONS


REPORT_TO = ("none", "tensorboard")
"""Where ``--report-to`` sends metrics besides ``metrics.jsonl``."""
SCHEDULES = ("linear", "constant", "cosine")
"""``--lr-schedule`` after the warm-up (:func:`bertkit.training.optim.decay`)."""


@dataclass
class TrainConfig:
    """Training-loop settings. Task configs extend this dataclass with their own fields.

    Attributes:
        epochs: passes over the training data.
        lr: peak learning rate of AdamW, reached at the end of warm-up.
        batch_size: examples per forward pass (per device).
        gradient_accumulation: forward passes per optimiser step; the effective batch is
            ``batch_size * gradient_accumulation``.
        warmup: linear warm-up length: a ratio of all optimiser steps if < 1, else a step count.
        lr_schedule: after the warm-up, ``linear`` decay to 0 at the last step (BERT),
            ``constant`` or ``cosine`` decay to 0 (:func:`bertkit.training.optim.decay`).
        weight_decay: AdamW decoupled weight decay (not applied to biases and LayerNorm weights).
        max_grad_norm: clip the global gradient L2 norm to this (0 = no clipping).
        precision: ``auto`` (bf16 autocast on CUDA with bf16 and on CPUs with AMX-BF16, else
            fp32), ``fp32``, ``bf16`` or ``fp16`` (CUDA only, with loss scaling).
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
        seed: seeds Python, NumPy and torch; the data order of epoch e derives from ``seed + e``.
        save_steps: write a checkpoint every this many optimiser steps (0: at epoch ends only).
        save_total_limit: keep at most this many step checkpoints (the newest).
        logging_steps: log training loss and throughput every this many optimiser steps.
        max_steps: train for exactly this many optimiser steps, over as many epochs as that
            takes (the last one partial); 0: train for ``epochs`` epochs.
        eval_steps: run the evaluation every this many optimiser steps and at the last step;
            0: after each epoch.
        skip_nonfinite: skip up to this many batches whose loss is not finite (each reported
            with its source lines); 0: the first one stops the run.
        report_to: ``none`` or ``tensorboard`` (event files in the run directory's ``tensorboard/``).
        fsdp: in a multi-process run, shard parameters, gradients and optimiser state (FSDP2,
            see :mod:`bertkit.training.fsdp`) instead of keeping DDP replicas; ignored by one
            process.
        output_dir: the run directory (created); None means ``runs/<task>-<data>-<time>``.
        resume: continue the run in ``output_dir`` from its newest checkpoint.
        overwrite: allow writing into an output directory that holds another run.
    """

    epochs: int = 3
    lr: float = 5e-5
    batch_size: int = 32
    gradient_accumulation: int = 1
    warmup: float = 0.1
    lr_schedule: str = "linear"
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    precision: str = "auto"
    device: str = "auto"
    seed: int = 42
    save_steps: int = 0
    save_total_limit: int = 2
    logging_steps: int = 50
    max_steps: int = 0
    eval_steps: int = 0
    skip_nonfinite: int = 0
    report_to: str = "none"
    fsdp: bool = False
    output_dir: str | None = None
    resume: bool = False
    overwrite: bool = False

    def validate(self) -> None:
        """Check every setting before anything is loaded or written (ranges, --resume needs a run).

        Raises:
            BertkitError: naming the first option at fault and what it must be.
        """
        self.check_ranges()
        if self.resume and not self.output_dir:
            raise BertkitError("--resume needs the --output-dir of the run to continue")
        if self.report_to == "tensorboard":
            import importlib.util

            if importlib.util.find_spec("tensorboard") is None:
                raise BertkitError("--report-to tensorboard needs the tensorboard package",
                                   expected="`pip install tensorboard` (or bertkit[tensorboard])")

    def check_ranges(self) -> None:
        """Check the loop settings' ranges (what :func:`~bertkit.training.loop.train` needs).

        Raises:
            BertkitError: naming the first option out of range and what it must be.
        """
        checks = [
            ("epochs", self.epochs >= 1, "an integer >= 1"),
            ("lr", math.isfinite(self.lr) and self.lr > 0, "a finite number > 0"),
            ("batch_size", self.batch_size >= 1, "an integer >= 1"),
            ("gradient_accumulation", self.gradient_accumulation >= 1, "an integer >= 1"),
            ("warmup", self.warmup >= 0, "a ratio in [0, 1) or a step count >= 1"),
            ("weight_decay", self.weight_decay >= 0, "a number >= 0"),
            ("max_grad_norm", self.max_grad_norm >= 0, "a number >= 0 (0: no clipping)"),
            ("precision", self.precision in PRECISIONS, ", ".join(PRECISIONS[:-1]) + " or "
             + PRECISIONS[-1]),
            ("save_steps", self.save_steps >= 0, "an integer >= 0"),
            ("save_total_limit", self.save_total_limit >= 1, "an integer >= 1"),
            ("logging_steps", self.logging_steps >= 1, "an integer >= 1"),
            ("max_steps", self.max_steps >= 0, "an integer >= 0 (0: use --epochs)"),
            ("eval_steps", self.eval_steps >= 0, "an integer >= 0 (0: after each epoch)"),
            ("skip_nonfinite", self.skip_nonfinite >= 0, "an integer >= 0"),
            ("report_to", self.report_to in REPORT_TO, " or ".join(REPORT_TO)),
            ("lr_schedule", self.lr_schedule in SCHEDULES, ", ".join(SCHEDULES)),
            ("fsdp", not (self.fsdp and self.precision == "fp16"),
             "bf16 or fp32 with --fsdp (fp16 loss scaling is not sharded)"),
        ]
        self.require(checks)

    def require(self, checks) -> None:
        """Raise for the first ``(option name, ok, what it must be)`` whose ``ok`` is False.

        Raises:
            BertkitError: ``--option-name is VALUE``, with what was expected.
        """
        for name, ok, expected in checks:
            if not ok:
                raise BertkitError(f"--{name.replace('_', '-')} is {getattr(self, name)!r}",
                                   expected=expected)
