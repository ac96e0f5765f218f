"""The background-thread batch prefetcher: same batches, same order, errors and waits reported."""

import threading
import time

import pytest
import torch

from bertkit.training.prefetch import Prefetcher


class Source:
    """Batch k of epoch e holds the value 100 e + k; ``delay`` seconds to build each."""

    def __init__(self, n=7, delay=0.0, fail_at=None):
        self.n, self.delay, self.fail_at = n, delay, fail_at
        self.built = []

    def num_batches(self, epoch):
        return self.n

    def iter_batches(self, epoch, start=0):
        for k in range(start, self.n):
            if k == self.fail_at:
                raise ValueError(f"bad batch {k}")
            time.sleep(self.delay)
            self.built.append((epoch, k, threading.current_thread().name))
            yield {"input_ids": torch.full((2, 3), 100 * epoch + k)}

    def describe(self, epoch, index):
        return f"batch {index} of epoch {epoch}"


def _values(batches):
    return [int(b["input_ids"][0, 0]) for b in batches]


def test_same_batches_in_the_same_order_from_any_start():
    src = Source()
    pre = Prefetcher(src, depth=3)
    assert pre.num_batches(1) == 7 and pre.describe(1, 2) == "batch 2 of epoch 1"
    assert _values(pre.iter_batches(1)) == [100 + k for k in range(7)]
    assert _values(pre.iter_batches(2, start=4)) == [204, 205, 206]
    assert all(name.startswith("bertkit-prefetch") for _, _, name in src.built)  # built off-thread


def test_a_source_error_is_raised_in_the_training_thread_at_its_batch():
    got = []
    with pytest.raises(ValueError, match="bad batch 3"):
        for b in Prefetcher(Source(fail_at=3)).iter_batches(0):
            got.append(b)
    assert _values(got) == [0, 1, 2]


def test_stopping_early_ends_the_worker():
    before = threading.active_count()
    it = Prefetcher(Source(n=1000), depth=2).iter_batches(0)
    assert _values([next(it), next(it)]) == [0, 1]
    it.close()
    assert threading.active_count() == before


def test_wait_share_is_high_when_building_is_slow_and_low_when_the_step_is():
    slow_data = Prefetcher(Source(n=6, delay=0.03), depth=2)
    for _ in slow_data.iter_batches(0):
        pass  # an instant step: it always waits for the next batch
    stats = slow_data.stats()
    assert stats["data_wait_share"] > 0.8 and stats["data_wait_ms"] > 20
    assert slow_data.stats() == {}  # a window: reset by each call

    slow_step = Prefetcher(Source(n=8, delay=0.002), depth=2)
    for i, _ in enumerate(slow_step.iter_batches(0)):
        if i == 0:
            slow_step.stats()  # the first batch always waits: leave it out
        time.sleep(0.03)  # a slow step: the next batch is ready before it is asked for
    stats = slow_step.stats()
    assert stats["data_wait_share"] < 0.1 and 0 <= stats["data_wait_max_share"] < 0.3
    assert 0 < slow_step.total_wait and slow_step.total_wait < slow_step.total_step


def test_batches_carry_their_counts_and_are_pinned_only_where_asked(monkeypatch):
    """The step reads no tensor for its throughput figures: the worker counts them; with
    ``pin`` the worker copies each tensor into pinned memory (CUDA present: the default)."""
    from bertkit.training.batches import batch_examples

    pinned = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda t: pinned.append(t.shape) or t)
    batches = list(Prefetcher(Source(n=2), pin=False).iter_batches(0))
    assert [b.counts for b in batches] == [(2, 6), (2, 6)] and not pinned
    assert batch_examples(batches[0]) == (2, 6)
    list(Prefetcher(Source(n=2), pin=True).iter_batches(0))
    assert pinned == [(2, 3), (2, 3)]
    assert Prefetcher(Source()).pin == torch.cuda.is_available()
