"""Options shared by every training command, so they are named and documented alike.

Defaults are None here: a flag the user did not give leaves the recipe's (or the dataclass's)
value, so the precedence is dataclass defaults < ``--recipe`` < explicit flags.
:func:`training_options` adds the loop's options (:class:`~bertkit.training.TrainConfig`) to a
command, so each command declares only its own.
"""

from __future__ import annotations

import functools
import inspect
import typing
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer

MaxLength = Annotated[Optional[int], typer.Option("--max-length", help="Subword pieces per window incl. [CLS]/[SEP]; longer input is windowed, never truncated. \\[default: 512]", min=8)]
Recipe = Annotated[Optional[Path], typer.Option("--recipe", help="A recipe: YAML file or name from `bertkit recipes` (keys as flags in snake_case); flags override it.")]
PrecisionChoice = Literal["auto", "fp32", "bf16", "fp16"]
InferencePrecision = Annotated[PrecisionChoice, typer.Option("--precision", help="auto (bf16 on CUDA, else fp32), fp32, bf16 or fp16.")]
InferenceDevice = Annotated[str, typer.Option("--device", help="auto, cpu, cuda, cuda:N or mps.")]
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="Encoder directory or hub id. \\[default: the packaged MiniLM-L6-H384 encoder]")]


# name: (type, flags, help, TrainConfig default, extra typer.Option arguments)
LOOP_OPTIONS = {
    "epochs": (int, ("--epochs",), "Passes over the training data.", 3, {"min": 1}),
    "lr": (float, ("--lr",), "Peak learning rate (AdamW).", 5e-5, {}),
    "batch_size": (int, ("--batch-size", "-b"), "Examples per forward pass (the global batch "
                   "over all processes).", 32, {"min": 1}),
    "seed": (int, ("--seed",), "Random seed (data order, initialisation, dropout).", 42, {}),
    "output_dir": (Path, ("--output-dir", "-o"), "Run directory.", "runs/<task>-<data>-<time>", {}),
    "gradient_accumulation": (int, ("--gradient-accumulation",), "Forward passes per optimiser "
                              "step.", 1, {"min": 1}),
    "warmup": (float, ("--warmup",), "Linear warm-up: a ratio of all steps if < 1, else a step "
               "count.", 0.1, {"min": 0}),
    "weight_decay": (float, ("--weight-decay",), "AdamW weight decay (not on biases/LayerNorm).",
                     0.01, {"min": 0}),
    "max_grad_norm": (float, ("--max-grad-norm",), "Clip the gradient norm (0: off).", 1.0,
                      {"min": 0}),
    "precision": (PrecisionChoice, ("--precision",),
                  "auto (bf16 on CUDA, else fp32), fp32, bf16 or fp16.", "auto", {}),
    "device": (str, ("--device",), "auto, cpu, cuda, cuda:N or mps.", "auto", {}),
    "save_steps": (int, ("--save-steps",), "Checkpoint every N optimiser steps (0: at epoch "
                   "ends only).", 0, {"min": 0}),
    "max_steps": (int, ("--max-steps",), "Train for exactly N optimiser steps, over as many "
                  "epochs as that takes (0: by --epochs).", 0, {"min": 0}),
    "eval_steps": (int, ("--eval-steps",), "Evaluate every N optimiser steps and at the end (0: "
                   "after each epoch).", 0, {"min": 0}),
    "save_total_limit": (int, ("--save-total-limit",), "Keep at most N step checkpoints (the "
                         "newest).", 2, {"min": 1}),
    "logging_steps": (int, ("--logging-steps",), "Log loss and throughput every N steps.", 50,
                      {"min": 1}),
    "skip_nonfinite": (int, ("--skip-nonfinite",), "Skip up to N batches with a non-finite loss "
                       "(each reported with its source lines) instead of stopping.", 0,
                       {"min": 0}),
    "report_to": (Literal["none", "tensorboard"], ("--report-to",), "none, or tensorboard "
                  "(event files in the run directory's tensorboard/ folder).", "none", {}),
    "fsdp": (bool, ("--fsdp/--no-fsdp",), "Under torchrun/accelerate: shard parameters, "
             "gradients and optimiser state over the processes (FSDP2) instead of DDP replicas.",
             "no-fsdp", {}),
    "resume": (bool, ("--resume",), "Continue the run in --output-dir from its newest "
               "checkpoint.", None, {}),
    "overwrite": (bool, ("--overwrite",), "Allow an --output-dir that holds another run.", None,
                  {}),
}


def training_options(exclude: tuple[str, ...] = (), **defaults):
    """Decorate a command with the training-loop options of :data:`LOOP_OPTIONS`.

    The command receives them as one dict, ``train_flags`` (None = not given). ``defaults``
    overrides the default shown in ``--help`` where the command's config differs from
    :class:`~bertkit.training.TrainConfig` (e.g. ``epochs=6``); ``exclude`` leaves options out.
    """
    names = [n for n in LOOP_OPTIONS if n not in exclude]

    def option(name: str):
        kind, flags, text, default, extra = LOOP_OPTIONS[name]
        default = defaults.get(name, default)
        if name == "max_steps" and "epochs" in exclude:  # a steps-only command: no --epochs
            text, extra = "Train for exactly N optimiser steps.", {"min": 1}
        shown = f" \\[default: {default}]" if default is not None else ""
        return Annotated[Optional[kind], typer.Option(*flags, help=text + shown, **extra)]

    def decorate(fn):
        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)  # resolve string annotations
        own = [p.replace(annotation=hints.get(p.name, p.annotation))
               for p in sig.parameters.values() if p.name != "train_flags"]
        tail = [p for p in own if p.name == "recipe"]  # keep --recipe last in --help
        params = [p for p in own if p.name != "recipe"]
        params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=option(n),
                                     default=None) for n in names]
        params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in tail]

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, train_flags={n: kwargs.pop(n, None) for n in names}, **kwargs)

        wrapper.__signature__ = sig.replace(parameters=params)
        wrapper.__annotations__ = {**{p.name: p.annotation for p in own},
                                   **{n: option(n) for n in names}, "return": None}
        return wrapper

    return decorate


def train_options(train_flags: dict | None = None, **values) -> dict:
    """The command's flags and the shared training flags as one config layer (None = not given)."""
    merged = {**(train_flags or {}), **values}
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in merged.items()}
