"""AdamW with BERT's parameter groups and a linear warm-up / linear decay schedule (or, after
the warm-up, a constant rate or a cosine decay).

Reference: Loshchilov & Hutter (2019) for AdamW; Devlin et al. (2019), appendix A.2, for the
schedule (linear warm-up to the peak rate, then linear decay to 0) and for exempting biases and
LayerNorm weights from weight decay; Loshchilov & Hutter (2017) for the cosine decay.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import get_linear_schedule_with_warmup

from bertkit.training.config import SCHEDULES  # noqa: F401 - the choices of decay()


def parameter_groups(model: nn.Module, weight_decay: float,
                     lr: float | None = None) -> list[dict]:
    """Split trainable parameters into decayed and no-decay groups (biases, norms), and by
    learning rate and start step where the model asks for them.

    A model may define ``lr_for(name) -> float | None``: the peak learning rate of parameter
    ``name`` (None: ``lr``), e.g. a higher rate for a freshly initialised parser head than for
    the pretrained encoder (as SuPar does); and ``frozen_steps_for(name) -> int``: optimiser
    steps during which the parameter's rate is 0 (e.g. the encoder while a new MLM head warms
    up), recorded as the group's ``"frozen_steps"`` (see :func:`build_scheduler`). Groups without
    an ``"lr"`` key use the optimiser's.
    """
    lr_for = getattr(model, "lr_for", None)
    frozen_for = getattr(model, "frozen_steps_for", None)
    groups: dict[tuple[bool, float | None, int], list] = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        no_decay = param.ndim < 2 or "norm" in name.lower() or name.endswith(".bias")
        rate = lr_for(name) if callable(lr_for) else None
        frozen = int(frozen_for(name)) if callable(frozen_for) else 0
        groups.setdefault((no_decay, None if rate in (None, lr) else rate, frozen), []).append(param)
    out = []
    for (no_decay, rate, frozen), params in sorted(
            groups.items(), key=lambda kv: (kv[0][2], kv[0][1] or 0, kv[0][0])):
        group = {"params": params, "weight_decay": 0.0 if no_decay else weight_decay}
        if rate is not None:
            group["lr"] = rate
        if frozen:
            group["frozen_steps"] = frozen
        out.append(group)
    return out


def build_optimizer(model: nn.Module, lr: float, weight_decay: float,
                    device: torch.device, sharded: bool = False) -> torch.optim.AdamW:
    """AdamW (betas 0.9/0.999, eps 1e-8), the fused kernel on CUDA devices and CPUs (the foreach
    one for FSDP-sharded parameters); per-group learning rates as :func:`parameter_groups` gives
    them (the schedule scales each alike).

    On a CPU the fused kernel updates each tensor in one pass instead of a dozen element-wise
    operators per tensor (the default for-loop implementation): a MiniLM NER training step on
    one thread took 0.89x the CPU time (benchmarks/results/cpu_peak/profile_step_1thread.log); the updates
    agree to rounding (tests/training/test_loop.py).
    """
    fused = device.type in ("cuda", "cpu") and not sharded
    return torch.optim.AdamW(parameter_groups(model, weight_decay, lr), lr=lr, betas=(0.9, 0.999),
                             eps=1e-8, fused=fused)


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict) -> None:
    """Load a saved optimiser state, keeping the kernel this device's optimiser was built with.

    ``Optimizer.load_state_dict`` takes every group setting from the checkpoint, ``fused`` and
    ``foreach`` included: a run resumed from a checkpoint written with another kernel (an
    FSDP-sharded run's foreach one, or an unfused CPU checkpoint of an older bertkit) would step
    with that kernel. This puts back the choice :func:`build_optimizer` made, and moves the step
    counters where the kernel wants them (the fused one: fp32 on the parameter's device, so a
    CPU checkpoint resumed on a GPU moves them to the GPU).
    """
    chosen = [{k: g[k] for k in ("fused", "foreach", "capturable") if k in g}
              for g in optimizer.param_groups]
    optimizer.load_state_dict(state)
    for group, keep in zip(optimizer.param_groups, chosen):
        group.update(keep)
        on_device = group.get("fused") or group.get("capturable")
        for p in group["params"]:
            step = optimizer.state.get(p, {}).get("step")
            if torch.is_tensor(step):
                optimizer.state[p]["step"] = (step.to(device=p.device, dtype=torch.float32)
                                              if on_device else step.to("cpu"))


def warmup_steps(warmup: float, total_steps: int) -> int:
    """Warm-up length in optimiser steps: ``warmup`` is a ratio of ``total_steps`` if < 1, else steps."""
    if warmup < 1:
        return int(math.ceil(warmup * total_steps))
    return int(warmup)


def decay(kind: str, progress: float) -> float:
    """The rate's share of the peak after the warm-up, ``progress`` in [0, 1] of the decay phase:
    ``linear`` 1 - p, ``constant`` 1 (a learning curve cut at any point is the curve of a
    longer run), ``cosine`` (1 + cos(pi p)) / 2.

    >>> [round(decay(k, 0.5), 3) for k in SCHEDULES]
    [0.5, 1.0, 0.5]
    """
    progress = min(max(progress, 0.0), 1.0)
    if kind == "constant":
        return 1.0
    if kind == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return 1.0 - progress


def build_scheduler(optimizer: torch.optim.Optimizer, warmup: float, total_steps: int,
                    kind: str = "linear"):
    """Linear warm-up over :func:`warmup_steps` steps, then (``kind``, :func:`decay`) linear
    decay to 0 at ``total_steps``, a constant rate, or a cosine decay to 0.

    A parameter group with ``"frozen_steps": F`` (:func:`parameter_groups`) has rate 0 for its
    first F steps, then its own linear warm-up (over :func:`warmup_steps` of the F..total steps
    left) and the same decay to 0 at ``total_steps`` (Howard & Ruder 2018, gradual unfreezing;
    a new head trained first on a frozen encoder). Without such groups this is
    ``get_linear_schedule_with_warmup``.
    """
    total = max(total_steps, 1)

    def schedule(frozen: int):
        warm = warmup_steps(warmup, max(total - frozen, 1))

        def rate(step: int) -> float:
            if step < frozen:
                return 0.0
            if step - frozen < warm:
                return float(step - frozen) / float(max(1, warm))
            return decay(kind, float(step - frozen - warm) / float(max(1, total - frozen - warm)))
        return rate

    frozen = [int(g.get("frozen_steps", 0)) for g in optimizer.param_groups]
    if not any(frozen) and kind == "linear":
        return get_linear_schedule_with_warmup(optimizer, warmup_steps(warmup, total_steps), total)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, [schedule(f) for f in frozen])
