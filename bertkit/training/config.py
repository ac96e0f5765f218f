"""Options shared by every training command, named alike across them (``--lr``, ``--warmup``, ...)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bertkit.errors import BertkitError
from bertkit.settings.options import option
from bertkit.training.devices import PRECISIONS


REPORT_TO = ("none", "tensorboard", "mlflow")
"""Where ``--report-to`` sends metrics besides ``metrics.jsonl``."""
SCHEDULES = ("linear", "constant", "cosine")
"""``--lr-schedule`` after the warm-up (:func:`bertkit.training.optim.decay`)."""
PRECISION_HELP = ("auto (bf16 on CUDA and AMX-BF16 or AVX512-BF16 CPUs, else fp32), " + ", ".join(PRECISIONS[1:-1])
                  + " or " + PRECISIONS[-1] + ".")


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
        report_to: ``none``, ``tensorboard`` (event files in the run directory's ``tensorboard/``)
            or ``mlflow`` (an MLflow run through MLflow's client: :mod:`bertkit.training.tracking`).
        fsdp: in a multi-process run, shard parameters, gradients and optimiser state (FSDP2,
            see :mod:`bertkit.training.fsdp`) instead of keeping DDP replicas; ignored by one
            process.
        output_dir: the run directory (created); None means ``runs/<task>-<data>-<time>``.
        resume: continue the run in ``output_dir`` from its newest checkpoint.
        overwrite: allow writing into an output directory that holds another run.
    """

    # each field is also the command-line option of every training command (bertkit.settings.options):
    # its help, flags and checks are declared here once; --help shows the command's default
    epochs: int = option(3, min=1, help="Passes over the training data.")
    lr: float = option(5e-5, help="Peak learning rate (AdamW).")
    batch_size: int = option(32, flags=("--batch-size", "-b"), min=1, help="Examples per "
                             "forward pass (the global batch over all processes).")
    gradient_accumulation: int = option(1, min=1, help="Forward passes per optimiser step.")
    warmup: float = option(0.1, min=0, help="Linear warm-up: a ratio of all steps if < 1, else a "
                           "step count.")
    lr_schedule: str = option("linear", choices=SCHEDULES, help="After the warm-up: linear "
                              "decay to 0 at the last step (BERT), constant, or cosine decay to 0.")
    weight_decay: float = option(0.01, min=0, help="AdamW weight decay (not on biases/LayerNorm).")
    max_grad_norm: float = option(1.0, min=0, help="Clip the gradient norm (0: off).")
    precision: str = option("auto", choices=PRECISIONS, help=PRECISION_HELP)
    device: str = option("auto", help="auto, cpu, cuda, cuda:N or mps.")
    seed: int = option(42, help="Random seed (data order, initialisation, dropout).")
    save_steps: int = option(0, min=0, help="Checkpoint every N optimiser steps (0: at epoch ends "
                             "only).")
    save_total_limit: int = option(2, min=1, help="Keep at most N step checkpoints (the newest).")
    logging_steps: int = option(50, min=1, help="Log loss and throughput every N steps.")
    max_steps: int = option(0, min=0, help="Train for exactly N optimiser steps, over as many "
                            "epochs as that takes (0: by --epochs).")
    eval_steps: int = option(0, min=0, help="Evaluate every N optimiser steps and at the end (0: "
                             "after each epoch).")
    skip_nonfinite: int = option(0, min=0, help="Skip up to N batches with a non-finite loss "
                                 "(each reported with its source lines) instead of stopping.")
    report_to: str = option("none", choices=REPORT_TO, help="none, tensorboard (event files in "
                            "the run directory's tensorboard/ folder) or mlflow (MLflow's client: "
                            "settings, metrics, curves and model card in $MLFLOW_TRACKING_URI, "
                            "else ./mlruns; needs the extra bertkit\\[mlflow]).")
    fsdp: bool = option(False, flags=("--fsdp/--no-fsdp",), help="Under torchrun/accelerate: "
                        "shard parameters, gradients and optimiser state over the processes "
                        "(FSDP2) instead of DDP replicas.")
    output_dir: str | None = option(None, flags=("--output-dir", "-o"), help="Run directory.",
                                    type=Path, shown="runs/<task>-<data or corpus name>-<time>")
    resume: bool = option(False, flags=("--resume",), help="Continue the run in --output-dir "
                          "from its newest checkpoint.")
    overwrite: bool = option(False, flags=("--overwrite",), help="Allow an --output-dir that "
                             "holds another run.")

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
        if self.report_to == "mlflow":
            from bertkit.training.tracking import check_reachable, require_mlflow, tracking_uri

            require_mlflow()
            check_reachable(tracking_uri())  # a server that is down: said now, not in minutes

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
