"""Device, precision and process placement for the training core.

Multi-process runs go through ``torch.distributed`` as set up by ``torchrun`` or
``accelerate launch`` (``RANK``/``WORLD_SIZE`` in the environment); bertkit starts no processes of
its own. Only the main process writes files.
"""

from __future__ import annotations

import contextlib
import os
import random
from dataclasses import dataclass

import numpy as np
import torch

from bertkit.errors import BertkitError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")


def rank() -> int:
    """This process's global rank (0 in a single-process run)."""
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    """Number of processes in the run (1 in a single-process run)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    """True on the process that writes checkpoints, metrics and outputs."""
    return rank() == 0


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's (CPU and CUDA) random generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_device(name: str) -> torch.device:
    """Turn ``auto``/``cpu``/``cuda[:N]``/``mps`` into a device.

    Raises:
        BertkitError: the device is unknown or not available on this machine.
    """
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise BertkitError(f"unknown device '{name}'", expected="auto, cpu, cuda, cuda:N or mps") from None
    if device.type not in ("cpu", "cuda", "mps"):
        raise BertkitError(f"device '{name}' is not supported by bertkit",
                           expected="auto, cpu, cuda, cuda:N or mps")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BertkitError(f"device '{name}' requested but CUDA is not available here",
                           expected="--device cpu or auto")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise BertkitError("device 'mps' requested but MPS is not available here")
    return device


@dataclass
class Runtime:
    """Where and how a model runs: the device and the autocast dtype (None = fp32)."""

    device: torch.device
    dtype: torch.dtype | None

    @property
    def precision(self) -> str:
        return {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[self.dtype]

    def autocast(self):
        """Context manager for mixed-precision forward passes (a no-op in fp32)."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype)

    def to_device(self, batch: dict) -> dict:
        """Move every tensor of ``batch`` to the device (non-blocking from pinned memory)."""
        return {k: v.to(self.device, non_blocking=True) if torch.is_tensor(v) else v
                for k, v in batch.items()}


def make_runtime(device: str = "auto", precision: str = "auto") -> Runtime:
    """Resolve ``--device`` and ``--precision`` into a :class:`Runtime`.

    ``auto`` precision is bf16 autocast on CUDA devices that support it and fp32 elsewhere
    (bf16 on a CPU is slower than fp32 on most CPUs and is used only when asked).

    Raises:
        BertkitError: unknown precision, or fp16 without CUDA.
    """
    dev = resolve_device(device)
    if precision not in PRECISIONS:
        raise BertkitError(f"unknown precision '{precision}'", expected=", ".join(PRECISIONS))
    if precision == "auto":
        dtype = torch.bfloat16 if dev.type == "cuda" and torch.cuda.is_bf16_supported() else None
    elif precision == "bf16":
        dtype = torch.bfloat16
    elif precision == "fp16":
        if dev.type != "cuda":
            raise BertkitError("fp16 mixed precision needs a CUDA device", expected="--precision bf16 or fp32")
        dtype = torch.float16
    else:
        dtype = None
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return Runtime(dev, dtype)
