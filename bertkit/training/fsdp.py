"""Fully sharded data parallelism (``--fsdp``), through PyTorch's FSDP2 (``fully_shard``).

Each process keeps a shard of the parameters, gradients and optimiser state instead of a whole
replica, so a model and AdamW's two moments need about ``1/N`` of the memory per device (Zhao et
al., 2023, "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel", VLDB; ZeRO-3 of
Rajbhandari et al., 2020). Every block of a ``ModuleList`` (the transformer layers) is one
sharded unit, gathered just before its forward and backward; the root (embeddings, heads, tied
MLM decoder) is another. Batches, loss weighting and the global batch are as with DDP
(:mod:`bertkit.training.distributed`): FSDP averages gradients the same way.

Checkpoints stay *full* state dicts (gathered to rank 0 with
``torch.distributed.checkpoint.state_dict``), so a checkpoint, ``best.pt`` and the saved model
are the same files as a one-process run writes: a run can be resumed, evaluated and reloaded
with or without FSDP. The optimiser state is saved in the same gathered form (keyed by parameter
name), so resuming an FSDP run needs ``--fsdp`` again.

The loop trains a sharded copy (``net``) and keeps the caller's plain module (``model``) on the
CPU; rank 0 loads the gathered weights into it to evaluate and to save, as it does under DDP.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from bertkit.errors import BertkitError


def shard_model(model: nn.Module, device: torch.device) -> nn.Module:
    """A sharded copy of ``model`` on ``device`` (``model`` itself is left untouched).

    Raises:
        BertkitError: FSDP is unavailable in this torch build.
    """
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
    except ImportError as exc:  # pragma: no cover - torch >= 2.6 has it
        raise BertkitError(f"--fsdp needs torch's FSDP2 (fully_shard): {exc}",
                           expected="torch >= 2.6") from None
    from bertkit.training.devices import world_size

    net = copy.deepcopy(model).to(device)
    mesh = init_device_mesh(device.type, (world_size(),))
    blocks = [block for module in net.modules() if isinstance(module, nn.ModuleList)
              for block in module]
    for block in reversed(blocks):  # innermost first
        fully_shard(block, mesh=mesh)
    fully_shard(net, mesh=mesh)
    return net


def _options(cpu_offload: bool = True):
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, cpu_offload=cpu_offload)


def full_model_state(net: nn.Module) -> dict[str, torch.Tensor]:
    """The whole model's state dict on CPU, on rank 0 (empty elsewhere). Collective: every rank
    must call it."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    return get_model_state_dict(net, options=_options())


def full_optimizer_state(net: nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """The whole optimiser state (keyed by parameter name) on rank 0. Collective."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    return get_optimizer_state_dict(net, optimizer, options=_options())


def load_full_state(net: nn.Module, optimizer: torch.optim.Optimizer | None,
                    model_state: dict[str, torch.Tensor], optimizer_state: dict | None) -> None:
    """Load full state dicts (read by every rank from a checkpoint) into the sharded ``net`` and
    its optimiser. Collective."""
    from torch.distributed.checkpoint.state_dict import (set_model_state_dict,
                                                         set_optimizer_state_dict)

    set_model_state_dict(net, model_state, options=_options(cpu_offload=False))
    if optimizer is not None and optimizer_state is not None:
        set_optimizer_state_dict(net, optimizer, optimizer_state,
                                 options=_options(cpu_offload=False))
