"""Counting what a training step reads back to the host, on any device (the CPU included).

A GPU runs ahead of the Python that drives it only while nothing asks for a result: every
``.item()``, ``.tolist()``, ``nonzero``, boolean-mask index, tensor built from Python data or
copy from pageable host memory makes the host wait for the device (NVIDIA's "CUDA Graph Best
Practice for PyTorch": such a step also cannot be graph-captured). On a CUDA device
``torch.cuda.set_sync_debug_mode("warn")`` reports the syncs; :class:`HostSyncCounter` counts
the operations that would cause them wherever the step runs, so a CPU test can prove a step
GPU-ready. It counts, in the thread that enters it only (the prefetch worker may read freely):

- ``aten._local_scalar_dense`` (``item``, ``int(t)``, ``float(t)``, ``bool(t)``, ``if t:``);
- ``aten.nonzero``, ``aten.masked_select`` and ``aten.index`` with a boolean index
  (data-dependent shapes that need the count on the host);
- ``aten.lift_fresh`` (``torch.tensor(python data)``: built on the host, copied to the device);
- copies to a non-CPU device from unpinned host memory;
- Python-level ``Tensor.tolist``, ``Tensor.numpy`` and ``Tensor.cpu`` calls.

Use :meth:`HostSyncCounter.paused` around what may read (logging, evaluation, checkpoints).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_SCALAR = {"aten._local_scalar_dense.default"}
_DATA_DEPENDENT = {"aten.nonzero.default", "aten.masked_select.default",
                   "aten.nonzero_static.default"}
_FROM_PYTHON = {"aten.lift_fresh.default", "aten.lift_fresh_copy.default"}
_PATCHED = ("tolist", "numpy", "cpu")


class _Mode(TorchDispatchMode):
    def __init__(self, owner: "HostSyncCounter") -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        if self.owner.active:
            if name in _SCALAR | _DATA_DEPENDENT | _FROM_PYTHON:
                self.owner.hit(name)
            elif name.startswith("aten.index.Tensor") and any(
                    torch.is_tensor(i) and i.dtype == torch.bool for i in (args[1] or ())):
                self.owner.hit("aten.index.Tensor (boolean mask)")
            elif name in ("aten._to_copy.default", "aten.copy_.default"):
                src = args[1] if name == "aten.copy_.default" else args[0]
                dst = kwargs.get("device") if name == "aten._to_copy.default" else args[0].device
                if (torch.is_tensor(src) and src.device.type == "cpu" and dst is not None
                        and torch.device(dst).type != "cpu" and not src.is_pinned()):
                    self.owner.hit("unpinned host-to-device copy")
        return func(*args, **kwargs)


class HostSyncCounter:
    """Context manager counting host reads and blocking copies (see the module docstring).

    Attributes:
        counts: ``Counter`` of operation name -> occurrences while active.
    """

    def __init__(self, armed: bool = True) -> None:
        self.counts: Counter = Counter()
        self._thread = None
        self._paused = 0 if armed else 1
        self._originals: dict[str, object] = {}

    @property
    def active(self) -> bool:
        return self._paused == 0 and threading.current_thread() is self._thread

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def hit(self, name: str) -> None:
        self.counts[name] += 1

    @contextlib.contextmanager
    def armed(self):
        """Count inside this block (a counter made with ``armed=False`` counts only here)."""
        self._paused -= 1
        try:
            yield
        finally:
            self._paused += 1

    @contextlib.contextmanager
    def paused(self):
        """Stop counting inside this block (logging, evaluation, saving)."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def __enter__(self) -> "HostSyncCounter":
        self._thread = threading.current_thread()
        for attr in _PATCHED:
            original = getattr(torch.Tensor, attr)
            self._originals[attr] = original

            def patched(tensor, *args, _original=original, _name=attr, **kwargs):
                if self.active:
                    self.hit(f"Tensor.{_name}")
                with self.paused():  # what the call dispatches is this one read
                    return _original(tensor, *args, **kwargs)

            setattr(torch.Tensor, attr, patched)
        self._mode = _Mode(self)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)
        for attr, original in self._originals.items():
            setattr(torch.Tensor, attr, original)
        self._originals.clear()
