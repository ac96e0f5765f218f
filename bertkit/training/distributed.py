"""Multi-process data parallelism through ``torch.distributed`` (DDP), as launched by ``torchrun``
or ``accelerate launch``: NCCL on CUDA, gloo on CPU. bertkit starts no processes itself.

The loop asks the batch source for the *global* batch (the same plan on every rank, since it
depends only on the seed and the epoch), and each rank keeps a contiguous slice of its rows
(:func:`shard_batch`): the data is split without duplicates or gaps and the global batch is the
one the user asked for. Losses are re-weighted (:func:`global_loss_scale`) so that the averaged
gradients equal those of one process on the whole batch.

Reference: Li et al. (2020), PyTorch Distributed: Experiences on Accelerating Data Parallel
Training (VLDB); the ``torch.distributed`` and ``torchrun`` documentation.
"""

from __future__ import annotations

import contextlib
import datetime
import os

import torch
import torch.distributed as dist

from bertkit.errors import BertkitError
from bertkit.training.devices import rank, world_size


def is_distributed() -> bool:
    """True when launched with more than one process (``WORLD_SIZE`` > 1)."""
    return world_size() > 1


def init_distributed(device: torch.device) -> None:
    """Join the process group set up by the launcher (``MASTER_ADDR``/``MASTER_PORT``/``RANK``/
    ``WORLD_SIZE`` in the environment); a no-op for one process or when already joined.

    Raises:
        BertkitError: the launcher's environment is incomplete or the group cannot be joined.
    """
    if not is_distributed() or (dist.is_available() and dist.is_initialized()):
        return
    if not dist.is_available():
        raise BertkitError("WORLD_SIZE > 1 but this torch build has no torch.distributed")
    missing = [k for k in ("MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise BertkitError(f"WORLD_SIZE is set but {', '.join(missing)} is not",
                           expected="a launch through torchrun or accelerate launch")
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    try:
        dist.init_process_group(backend=backend, timeout=datetime.timedelta(minutes=30))
    except (RuntimeError, ValueError) as exc:
        raise BertkitError(f"cannot join the {backend} process group: {exc}") from None


def wrap_model(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """``DistributedDataParallel(model)`` in a multi-process run, else ``model`` itself."""
    if not is_distributed():
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda"
                                   else None, find_unused_parameters=False)


def shard_batch(batch: dict, n_rows: int) -> dict:
    """This rank's contiguous slice of a global batch of ``n_rows`` rows (dim 0 of every tensor
    with ``n_rows`` rows; other entries are kept whole). Slices differ by at most one row.

    Raises:
        BertkitError: fewer rows than processes (a rank would get nothing).
    """
    world = world_size()
    if world == 1:
        return batch
    if n_rows < world:
        raise BertkitError(f"a batch of {n_rows} examples cannot be split over {world} processes",
                           expected=f"--batch-size of at least {world}")
    base, extra = divmod(n_rows, world)
    start = rank() * base + min(rank(), extra)
    stop = start + base + (1 if rank() < extra else 0)
    return {k: v[start:stop] if torch.is_tensor(v) and v.ndim and v.shape[0] == n_rows else v
            for k, v in batch.items()}


def all_reduce_sum(values: torch.Tensor) -> torch.Tensor:
    """Element-wise sum over ranks (a copy; ``values`` itself for one process)."""
    if not is_distributed():
        return values
    out = values.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


def global_loss_scale(local_count: float, device: torch.device) -> float:
    """Factor that turns this rank's mean loss over ``local_count`` targets into its share of
    the global mean, pre-multiplied by the world size because DDP averages gradients:
    ``world * local_count / sum(local_count over ranks)`` (1.0 for one process)."""
    if not is_distributed():
        return 1.0
    total = float(all_reduce_sum(torch.tensor([float(local_count)], device=device))[0])
    return world_size() * local_count / max(total, 1e-12)


def reduce_batch(local_count, values: torch.Tensor, stop: bool,
                 device: torch.device) -> tuple[float, torch.Tensor, bool]:
    """Everything the ranks must agree on after a forward pass, in ONE all-reduce.

    Sums ``[local_count, stop, values * local_count]`` over ranks, so that each rank learns (a)
    its loss scale (as :func:`global_loss_scale`), (b) the global means of the logged losses
    (each rank's mean weighted by its share of the loss targets, so a non-finite loss on any
    rank is non-finite on all) and (c) whether any rank was asked to stop (SIGINT/SIGTERM).

    Args:
        local_count: this rank's loss targets (a number or a 0-dim tensor; examples when the
            model does not report ``loss_count``). Read only in a multi-process run.
        values: ``[K]`` float, this rank's mean losses (``loss`` first, then ``*_loss`` parts).
        stop: whether this process received a stop signal.
        device: where the collective runs (CUDA for NCCL, CPU for gloo).

    Returns:
        (loss scale ``world * local / total``, ``[K]`` global mean losses, stop on any rank).
        One process: ``(1.0, values, stop)`` without any communication (no device sync).
    """
    if not is_distributed():
        return 1.0, values, stop
    count = float(local_count)
    head = torch.tensor([count, 1.0 if stop else 0.0], device=device)
    summed = all_reduce_sum(torch.cat([head, values.to(device).float() * count]))
    total = max(float(summed[0]), 1e-12)
    return world_size() * count / total, summed[2:] / total, bool(summed[1] > 0)


def barrier() -> None:
    """Wait for every rank (a no-op for one process)."""
    if is_distributed() and dist.is_initialized():
        dist.barrier()


@contextlib.contextmanager
def main_process_first(device: torch.device):
    """Run the body on rank 0 first while the other ranks wait, then on the others (which then
    find, e.g., the tokenised-corpus cache rank 0 built instead of all building it at once).
    Joins the process group if needed; a no-op for one process. Rank 0 releases the others even
    if its body raises, so they fail with their own message instead of waiting forever."""
    init_distributed(device)
    if is_distributed() and rank() != 0:
        barrier()
    try:
        yield
    finally:
        if is_distributed() and rank() == 0:
            barrier()


def broadcast_flag(flag: bool, device: torch.device) -> bool:
    """True on every rank if ``flag`` is True on any (a stop request, a non-finite loss)."""
    if not is_distributed():
        return flag
    return bool(all_reduce_sum(torch.tensor([1.0 if flag else 0.0], device=device))[0] > 0)
