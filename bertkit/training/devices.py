"""Device, precision and process placement for the training core.

Multi-process runs go through ``torch.distributed`` as set up by ``torchrun`` or
``accelerate launch`` (``RANK``/``WORLD_SIZE`` in the environment); bertkit starts no processes of
its own. Only the main process writes files.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
from dataclasses import dataclass
from pathlib import Path

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


@functools.lru_cache(maxsize=1)
def cpu_has_amx_bf16() -> bool:
    """True where this process can use the CPU's AMX-BF16 matrix units (Intel Sapphire Rapids and
    later), which make bf16 matrix products several times faster than fp32 ones.

    Asks torch first (``torch.cpu._is_amx_tile_supported``: CPUID and the kernel's permission to
    use the tiles, which oneDNN needs); only a torch without that check falls back on the
    ``amx_bf16`` flag of ``/proc/cpuinfo`` (Linux; anything unreadable counts as no AMX). Every
    CPU with AMX tiles so far has AMX-BF16. The answer is cached for the process.
    """
    return _cpu_feature("_is_amx_tile_supported", "amx_bf16")


@functools.lru_cache(maxsize=1)
def cpu_has_avx512_bf16() -> bool:
    """True where the CPU computes bf16 dot products in AVX-512 vector units (``VDPBF16PS``:
    Intel Cooper Lake, AMD Zen 4 and later). There, oneDNN's bf16 matrix products run faster
    than fp32 ones (measured 2.4x on an AMD EPYC Zen 4, ``benchmarks/cpu_peak.py``), while on
    AVX2-only CPUs bf16 is emulated by conversions and runs at about 0.16x fp32.

    Asks torch (``torch.cpu._is_avx512_bf16_supported``), else the ``avx512_bf16`` flag of
    ``/proc/cpuinfo``. Cached for the process.
    """
    return _cpu_feature("_is_avx512_bf16_supported", "avx512_bf16")


def _cpu_feature(probe_name: str, flag: str) -> bool:
    """torch's own CPU probe ``torch.cpu.<probe_name>`` where this torch has it (an error
    counts as no), else whether ``/proc/cpuinfo`` lists ``flag``."""
    probe = getattr(torch.cpu, probe_name, None)
    if probe is not None:
        try:
            return bool(probe())
        except RuntimeError:
            return False
    return flag in _cpu_flags()


def _cpu_flags() -> set[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


@dataclass
class Runtime:
    """Where and how a model runs: the device, the autocast dtype (None = fp32) and why that
    precision was chosen (e.g. ``auto: bf16, CPU has AMX-BF16``; see :func:`make_runtime`)."""

    device: torch.device
    dtype: torch.dtype | None
    reason: str = ""

    @property
    def precision(self) -> str:
        return {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[self.dtype]

    def describe(self) -> str:
        """One line for a command's first output: ``device cpu, precision bf16 (auto: ...)``."""
        return f"device {self.device}, precision {self.precision}" + (
            f" ({self.reason})" if self.reason else "")

    def autocast(self):
        """Context manager for mixed-precision forward passes (a no-op in fp32)."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype)

    def to_device(self, batch: dict) -> dict:
        """Move every tensor of ``batch`` to the device, without blocking the host where the
        tensor is in pinned memory (:class:`~bertkit.training.prefetch.Prefetcher` pins its
        batches when a CUDA device is present); from pageable memory the copy blocks."""
        return {k: v.to(self.device, non_blocking=True) if torch.is_tensor(v) else v
                for k, v in batch.items()}


def auto_dtype(dev: torch.device) -> tuple[torch.dtype | None, str]:
    """What ``--precision auto`` means on ``dev``: (autocast dtype or None for fp32, the reason).

    bf16 autocast on a CUDA device that supports bf16 and on a CPU whose bf16 matrix products
    are faster than fp32 ones: AMX-BF16 (:func:`cpu_has_amx_bf16`) or AVX512-BF16
    (:func:`cpu_has_avx512_bf16`; 2.4x fp32 in matmuls and 1.5-2.8x in NER training on an AMD
    EPYC Zen 4); fp32 elsewhere: an AVX2-only CPU converts every bf16 product and runs it at
    about 0.16x fp32.
    """
    if dev.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return torch.bfloat16, "auto: bf16, CUDA device supports bf16"
        return None, "auto: fp32, CUDA device lacks bf16"
    if dev.type == "cpu":
        if cpu_has_amx_bf16():
            return torch.bfloat16, "auto: bf16, CPU has AMX-BF16"
        if cpu_has_avx512_bf16():
            return torch.bfloat16, "auto: bf16, CPU has AVX512-BF16"
        return None, "auto: fp32, CPU lacks AMX-BF16 and AVX512-BF16"
    return None, f"auto: fp32 on {dev.type}"


def make_runtime(device: str = "auto", precision: str = "auto", console=None) -> Runtime:
    """Resolve ``--device`` and ``--precision`` into a :class:`Runtime`.

    ``auto`` precision is bf16 autocast where the hardware computes bf16 well (a CUDA device with
    bf16, a CPU with AMX-BF16 or AVX512-BF16) and fp32 elsewhere (:func:`auto_dtype`); ``fp32``, ``bf16`` and
    ``fp16`` force that precision. Weights stay fp32 under autocast (and on disk).

    Args:
        console: where the main process prints :meth:`Runtime.describe` (None: nothing printed).

    Raises:
        BertkitError: unknown precision, or fp16 without CUDA.
    """
    dev = resolve_device(device)
    if precision not in PRECISIONS:
        raise BertkitError(f"unknown precision '{precision}'", expected=", ".join(PRECISIONS))
    if precision == "auto":
        dtype, reason = auto_dtype(dev)
    elif precision == "fp16" and dev.type != "cuda":
        raise BertkitError("fp16 mixed precision needs a CUDA device", expected="--precision bf16 or fp32")
    else:
        dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
        reason = f"set to {precision} (--precision or a recipe), not auto"
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    runtime = Runtime(dev, dtype, reason)
    if console is not None and is_main_process():
        console.print(runtime.describe(), highlight=False)
    return runtime
