"""Options shared by every training command, so they are named and documented alike.

Defaults are None here: a flag the user did not give leaves the recipe's (or the dataclass's)
value, so the precedence is dataclass defaults < ``--recipe`` < explicit flags.
:func:`training_options` adds the loop's options (:class:`~bertkit.training.TrainConfig`) to a
command, so each command declares only its own.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer

from bertkit.masking import STRATEGIES as MASKING_STRATEGIES
from bertkit.training.config import REPORT_TO, SCHEDULES
from bertkit.training.devices import PRECISIONS
from bertkit.vocab.build import ALGORITHMS
from bertkit.vocab.coverage import NORMALIZATIONS

# Options with a fixed set of values are typed with it, so the command line checks them (exit 2,
# the choices in the message) and --help shows short lists. The fine-tuning tasks declare their
# own options and choices (bertkit.options, on their settings' fields; bertkit/cli/_tasks.py).
Masking = Literal[tuple(MASKING_STRATEGIES)]
Algorithm = Literal[ALGORITHMS]
Normalization = Literal[NORMALIZATIONS]
ModelSize = Literal["tiny", "small", "base", "large"]  # bertkit.tasks.pretrain.model.SIZES

Recipe = Annotated[Optional[Path], typer.Option("--recipe", help="A recipe: YAML file or name from `bertkit recipes` (keys as flags in snake_case); flags override it.")]
PrecisionChoice = Literal[PRECISIONS]  # the choices the runtime accepts (bertkit.training.devices)
PRECISION_HELP = "auto (bf16 on CUDA and AMX-BF16 CPUs, else fp32), " + ", ".join(PRECISIONS[1:-1]) + " or " \
    + PRECISIONS[-1] + "."
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="Encoder directory or hub id. \\[default: the packaged MiniLM-L6-H384 encoder]")]


# name: (type, flags, help, extra typer.Option arguments). The default shown in --help is the
# TrainConfig field's (or the command's config's, see training_options), never written here.
LOOP_OPTIONS = {
    "epochs": (int, ("--epochs",), "Passes over the training data.", {"min": 1}),
    "lr": (float, ("--lr",), "Peak learning rate (AdamW).", {}),
    "batch_size": (int, ("--batch-size", "-b"), "Examples per forward pass (the global batch "
                   "over all processes).", {"min": 1}),
    "seed": (int, ("--seed",), "Random seed (data order, initialisation, dropout).", {}),
    "output_dir": (Path, ("--output-dir", "-o"), "Run directory.", {}),
    "gradient_accumulation": (int, ("--gradient-accumulation",), "Forward passes per optimiser "
                              "step.", {"min": 1}),
    "warmup": (float, ("--warmup",), "Linear warm-up: a ratio of all steps if < 1, else a step "
               "count.", {"min": 0}),
    "lr_schedule": (Literal[SCHEDULES], ("--lr-schedule",), "After the warm-up: linear decay "
                    "to 0 at the last step (BERT), constant, or cosine decay to 0.", {}),
    "weight_decay": (float, ("--weight-decay",), "AdamW weight decay (not on biases/LayerNorm).",
                     {"min": 0}),
    "max_grad_norm": (float, ("--max-grad-norm",), "Clip the gradient norm (0: off).",
                      {"min": 0}),
    "precision": (PrecisionChoice, ("--precision",), PRECISION_HELP, {}),
    "device": (str, ("--device",), "auto, cpu, cuda, cuda:N or mps.", {}),
    "save_steps": (int, ("--save-steps",), "Checkpoint every N optimiser steps (0: at epoch "
                   "ends only).", {"min": 0}),
    "max_steps": (int, ("--max-steps",), "Train for exactly N optimiser steps, over as many "
                  "epochs as that takes (0: by --epochs).", {"min": 0}),
    "eval_steps": (int, ("--eval-steps",), "Evaluate every N optimiser steps and at the end (0: "
                   "after each epoch).", {"min": 0}),
    "save_total_limit": (int, ("--save-total-limit",), "Keep at most N step checkpoints (the "
                         "newest).", {"min": 1}),
    "logging_steps": (int, ("--logging-steps",), "Log loss and throughput every N steps.",
                      {"min": 1}),
    "skip_nonfinite": (int, ("--skip-nonfinite",), "Skip up to N batches with a non-finite loss "
                       "(each reported with its source lines) instead of stopping.",
                       {"min": 0}),
    "report_to": (Literal[REPORT_TO], ("--report-to",), f"{REPORT_TO[0]}, or "
                  f"{' or '.join(REPORT_TO[1:])} (event files in the run directory's "
                  "tensorboard/ folder).", {}),
    "fsdp": (bool, ("--fsdp/--no-fsdp",), "Under torchrun/accelerate: shard parameters, "
             "gradients and optimiser state over the processes (FSDP2) instead of DDP replicas.",
             {}),
    "resume": (bool, ("--resume",), "Continue the run in --output-dir from its newest "
               "checkpoint.", {}),
    "overwrite": (bool, ("--overwrite",), "Allow an --output-dir that holds another run.", {}),
}

_SHOWN = {"output_dir": "runs/<task>-<data or corpus name>-<time>"}  # computed at run time: described
_NOT_SHOWN = ("resume", "overwrite")  # plain switches, off unless given


def shown_default(name: str, value: Any) -> str | None:
    """How ``--help`` shows a default: a switch ``--x/--no-x`` by the name of its setting
    (``no-fsdp``), a number as :func:`bertkit.config.format_value` writes it (``5e-5``, ``0.1``);
    None: show none.

    >>> shown_default("fsdp", False), shown_default("lr", 5e-05), shown_default("resume", False)
    ('no-fsdp', '5e-5', None)
    """
    if name in _SHOWN:
        return _SHOWN[name]
    if name in _NOT_SHOWN:
        return None
    from bertkit.options import shown_default as shown

    return shown(name, value)  # 5e-5, as the commands' own help texts write rates


def training_options(exclude: tuple[str, ...] = (), **defaults):
    """Decorate a command with the training-loop options of :data:`LOOP_OPTIONS`.

    The command receives them as one dict, ``train_flags`` (None = not given). ``--help`` shows
    :class:`~bertkit.training.TrainConfig`'s defaults; ``defaults`` gives the command config's
    own where it differs (e.g. ``epochs=6`` for dep; ``tests/cli/test_options.py`` checks they
    are the config's real values); ``exclude`` leaves options out.
    """
    from bertkit.training.config import TrainConfig

    names = [n for n in LOOP_OPTIONS if n not in exclude]
    base = {f.name: f.default for f in dataclasses.fields(TrainConfig)}

    def option(name: str):
        kind, flags, text, extra = LOOP_OPTIONS[name]
        default = shown_default(name, defaults.get(name, base[name]))
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
