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


def parameter_groups(model: nn.Module, weight_decay: float,
                     lr: float | None = None) -> list[dict]:
    """Split trainable parameters into decayed and no-decay groups (biases, norms), and by
    learning rate where the model asks for one.

    A model may define ``lr_for(name) -> float | None``: the peak learning rate of parameter
    ``name`` (None: ``lr``), e.g. a higher rate for a freshly initialised parser head than for
    the pretrained encoder (as SuPar does). Groups without an ``"lr"`` key use the optimiser's.
    """
    lr_for = getattr(model, "lr_for", None)
    groups: dict[tuple[bool, float | None], list] = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        no_decay = param.ndim < 2 or "norm" in name.lower() or name.endswith(".bias")
        rate = lr_for(name) if callable(lr_for) else None
        groups.setdefault((no_decay, None if rate in (None, lr) else rate), []).append(param)
    out = []
    for (no_decay, rate), params in sorted(groups.items(), key=lambda kv: (kv[0][1] or 0, kv[0][0])):
        group = {"params": params, "weight_decay": 0.0 if no_decay else weight_decay}
        if rate is not None:
            group["lr"] = rate
        out.append(group)
    return out


def build_optimizer(model: nn.Module, lr: float, weight_decay: float,
                    device: torch.device, sharded: bool = False) -> torch.optim.AdamW:
    """AdamW (betas 0.9/0.999, eps 1e-8), the fused CUDA kernel on CUDA devices (the foreach one
    for FSDP-sharded parameters); per-group learning rates as :func:`parameter_groups` gives
    them (the schedule scales each alike)."""
    fused = device.type == "cuda" and not sharded
    return torch.optim.AdamW(parameter_groups(model, weight_decay, lr), lr=lr, betas=(0.9, 0.999),
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
