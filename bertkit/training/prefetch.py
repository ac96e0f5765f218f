"""Batches prepared ahead of the training step, in a background thread.

:class:`Prefetcher` wraps any :class:`~bertkit.training.batches.BatchSource`: a worker thread
runs the source's own ``iter_batches(epoch, start)`` (reading, packing, masking) and keeps up to
``depth`` finished batches in a queue, so the step takes the next batch as soon as it needs it
instead of waiting for it to be built. The order and content do not change (the worker runs the
same deterministic code with the same per-batch seeds), so resuming at batch ``k`` stays exact.
A worker's exception is raised in the training thread at the batch where it happened.

The wrapper measures what is left of the wait: for every batch, the seconds the step blocked on
the queue, and its step time: that wait plus the time from handing the batch over to the next
request (or to the next :meth:`Prefetcher.stats` call). :meth:`Prefetcher.stats` gives the window since its last call (``data_wait_share``:
waiting / step time, 0 = the step never waited; ``data_wait_max_share``: the worst single step;
``data_wait_ms``: mean milliseconds waited per batch), which the loop adds to each ``train``
record of ``metrics.jsonl``. Masking releases the GIL in its torch/NumPy operations, so a thread
overlaps it with the step; on a GPU the device then never waits for masking.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Iterator

import torch

from bertkit.training.batches import CountedBatch, batch_examples

_END = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetcher:
    """A :class:`~bertkit.training.batches.BatchSource` whose batches are built ``depth`` ahead.

    Args:
        source: the batch source to wrap (its other attributes, e.g. ``describe``, pass through).
        depth: finished batches kept ready (>= 1).
        pin: copy each batch's tensors into pinned (page-locked) memory in the worker, so that
            the step's host-to-device copies do not block the host (None: where CUDA is
            available).
    """

    def __init__(self, source: Any, depth: int = 2, pin: bool | None = None) -> None:
        if depth < 1:
            raise ValueError(f"prefetch depth {depth} < 1")
        self.source, self.depth = source, depth
        self.pin = torch.cuda.is_available() if pin is None else pin
        self._wait = self._busy = self._worst = 0.0
        self._batches = 0
        self.total_wait = self.total_step = 0.0  # seconds, over the whole run
        self._pending: tuple[float, float] | None = None  # (wait, time handed over)

    def __getattr__(self, name: str) -> Any:  # describe() etc. of the wrapped source
        if name == "source":
            raise AttributeError(name)
        return getattr(self.source, name)

    def num_batches(self, epoch: int) -> int:
        return self.source.num_batches(epoch)

    def iter_batches(self, epoch: int, start: int = 0) -> Iterator[dict[str, torch.Tensor]]:
        """The source's batches ``start, start + 1, ...`` of ``epoch``, built by a worker thread."""
        ready: queue.Queue = queue.Queue(maxsize=self.depth)
        stop = threading.Event()

        def put(item: Any) -> bool:
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    continue
            return False

        def work() -> None:
            try:
                for batch in self.source.iter_batches(epoch, start):
                    counts = batch_examples(batch)  # here, so the step reads no tensor for them
                    batch = CountedBatch((k, v.pin_memory() if self.pin and torch.is_tensor(v)
                                          else v) for k, v in batch.items())
                    batch.counts = counts
                    if not put(batch):
                        return
                put(_END)
            except BaseException as error:  # raised again in the training thread
                put(_Failed(error))

        worker = threading.Thread(target=work, name=f"bertkit-prefetch-{epoch}", daemon=True)
        worker.start()
        try:
            while True:
                asked = time.perf_counter()
                self._close_pending(asked)  # the previous batch's step ends when it asks again
                item = ready.get()
                now = time.perf_counter()
                if item is _END:
                    return
                if isinstance(item, _Failed):
                    raise item.error
                self._pending = (now - asked, now)
                yield item
        finally:
            stop.set()
            worker.join()

    def _close_pending(self, now: float) -> None:
        """Count the batch being trained on: its wait, and its step = wait + time since handed."""
        if self._pending is None:
            return
        wait, handed = self._pending
        self._pending = None
        step = wait + (now - handed)
        self._wait += wait
        self._busy += step
        self.total_wait += wait
        self.total_step += step
        self._worst = max(self._worst, wait / step if step > 0 else 0.0)
        self._batches += 1

    def stats(self) -> dict[str, float]:
        """The wait for batches since the last call: ``data_wait_share`` (seconds waited over
        seconds per batch, in [0, 1]), ``data_wait_max_share`` (the worst batch) and
        ``data_wait_ms`` (mean milliseconds waited per batch); empty if no batch was taken.

        The batch in training when it is called (the loop calls it right after a step) counts
        as ended now, so evaluation or checkpointing after the step does not count as step time.
        """
        self._close_pending(time.perf_counter())
        if not self._batches:
            return {}
        out = {"data_wait_share": self._wait / max(self._busy, 1e-12),
               "data_wait_max_share": self._worst,
               "data_wait_ms": 1000 * self._wait / self._batches}
        self._wait = self._busy = self._worst = 0.0
        self._batches = 0
        return out
