"""Options shared by every training command, named alike across them (``--lr``, ``--warmup``, ...)."""

from __future__ import annotations

from dataclasses import dataclass


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
        weight_decay: AdamW decoupled weight decay (not applied to biases and LayerNorm weights).
        max_grad_norm: clip the global gradient L2 norm to this (0 = no clipping).
        precision: ``auto`` (bf16 autocast on CUDA where supported, else fp32), ``fp32``, ``bf16``
            or ``fp16`` (CUDA only, with loss scaling).
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
        seed: seeds Python, NumPy and torch; the data order of epoch e derives from ``seed + e``.
        save_steps: write a checkpoint every this many optimiser steps (0: at epoch ends only).
        save_total_limit: keep at most this many step checkpoints (the newest).
        logging_steps: log training loss and throughput every this many optimiser steps.
        output_dir: the run directory (created); None means ``runs/<task>-<data>-<time>``.
        resume: continue the run in ``output_dir`` from its newest checkpoint.
        overwrite: allow writing into an output directory that holds another run.
    """

    epochs: int = 3
    lr: float = 5e-5
    batch_size: int = 32
    gradient_accumulation: int = 1
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    precision: str = "auto"
    device: str = "auto"
    seed: int = 42
    save_steps: int = 0
    save_total_limit: int = 2
    logging_steps: int = 50
    output_dir: str | None = None
    resume: bool = False
    overwrite: bool = False
