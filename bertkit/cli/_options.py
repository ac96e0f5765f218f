"""Options shared by every training command, so they are named and documented alike.

Defaults are None here: a flag the user did not give leaves the recipe's (or the dataclass's)
value, so the precedence is dataclass defaults < ``--recipe`` < explicit flags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

Epochs = Annotated[Optional[int], typer.Option("--epochs", help="Passes over the training data. [default: 3]", min=1)]
LR = Annotated[Optional[float], typer.Option("--lr", help="Peak learning rate (AdamW). [default: 5e-5]")]
BatchSize = Annotated[Optional[int], typer.Option("--batch-size", "-b", help="Examples per forward pass. [default: 32]", min=1)]
MaxLength = Annotated[Optional[int], typer.Option("--max-length", help="Subword pieces per window incl. [CLS]/[SEP]; longer input is windowed, never truncated. [default: 512]", min=8)]
Seed = Annotated[Optional[int], typer.Option("--seed", help="Random seed (data order, initialisation, dropout). [default: 42]")]
OutputDir = Annotated[Optional[Path], typer.Option("--output-dir", "-o", help="Run directory. [default: runs/<task>-<data>-<time>]")]
GradAccum = Annotated[Optional[int], typer.Option("--gradient-accumulation", help="Forward passes per optimiser step. [default: 1]", min=1)]
Warmup = Annotated[Optional[float], typer.Option("--warmup", help="Linear warm-up: a ratio of all steps if < 1, else a step count. [default: 0.1]", min=0)]
WeightDecay = Annotated[Optional[float], typer.Option("--weight-decay", help="AdamW weight decay (not on biases/LayerNorm). [default: 0.01]", min=0)]
MaxGradNorm = Annotated[Optional[float], typer.Option("--max-grad-norm", help="Clip the gradient norm (0: off). [default: 1.0]", min=0)]
Precision = Annotated[Optional[str], typer.Option("--precision", help="auto (bf16 on CUDA, else fp32), fp32, bf16 or fp16. [default: auto]")]
Device = Annotated[Optional[str], typer.Option("--device", help="auto, cpu, cuda, cuda:N or mps. [default: auto]")]
SaveSteps = Annotated[Optional[int], typer.Option("--save-steps", help="Checkpoint every N optimiser steps (0: at epoch ends only). [default: 0]", min=0)]
LoggingSteps = Annotated[Optional[int], typer.Option("--logging-steps", help="Log loss and throughput every N steps. [default: 50]", min=1)]
Resume = Annotated[Optional[bool], typer.Option("--resume", help="Continue the run in --output-dir from its newest checkpoint.")]
Overwrite = Annotated[Optional[bool], typer.Option("--overwrite", help="Allow an --output-dir that holds another run.")]
Recipe = Annotated[Optional[Path], typer.Option("--recipe", help="A recipe: YAML file or name from `bertkit recipes` (keys as flags in snake_case); flags override it.")]
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="Encoder directory or hub id. [default: the packaged MiniLM-L6-H384 encoder]")]


def train_options(**values) -> dict:
    """The shared training flags as a config layer (None = not given)."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in values.items()}
