"""AdamW with BERT's parameter groups and a linear warm-up / linear decay schedule.

Reference: Loshchilov & Hutter (2019) for AdamW; Devlin et al. (2019), appendix A.2, for the
schedule (linear warm-up to the peak rate, then linear decay to 0) and for exempting biases and
LayerNorm weights from weight decay.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import get_linear_schedule_with_warmup


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Split trainable parameters into a decayed group and a no-decay group (biases, norms)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim < 2 or "norm" in name.lower() or name.endswith(".bias"):
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, lr: float, weight_decay: float,
                    device: torch.device) -> torch.optim.AdamW:
    """AdamW (betas 0.9/0.999, eps 1e-8), the fused CUDA kernel on CUDA devices."""
    fused = device.type == "cuda"
    return torch.optim.AdamW(parameter_groups(model, weight_decay), lr=lr, betas=(0.9, 0.999),
                             eps=1e-8, fused=fused)


def warmup_steps(warmup: float, total_steps: int) -> int:
    """Warm-up length in optimiser steps: ``warmup`` is a ratio of ``total_steps`` if < 1, else steps."""
    if warmup < 1:
        return int(math.ceil(warmup * total_steps))
    return int(warmup)


def build_scheduler(optimizer: torch.optim.Optimizer, warmup: float, total_steps: int):
    """Linear warm-up over :func:`warmup_steps` steps, then linear decay to 0 at ``total_steps``."""
    return get_linear_schedule_with_warmup(optimizer, warmup_steps(warmup, total_steps),
                                           max(total_steps, 1))
