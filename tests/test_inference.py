"""run_batches: every batch once, same results with two workers, errors and thread count kept."""

import pytest
import torch

from bertkit.predict.inference import inference_workers, run_batches


def test_two_workers_run_every_batch_once_with_same_results():
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 3)
    batches = [torch.randn(n, 8) for n in (5, 4, 4, 3, 2, 1, 1)]
    one, two = {}, {}
    run_batches(lambda b: one.__setitem__(id(b), lin(b)), batches, "cpu", workers=1)
    threads = torch.get_num_threads()
    seen = []

    def fn(b):
        assert torch.is_inference_mode_enabled()
        seen.append(id(b))
        two[id(b)] = lin(b)

    run_batches(fn, batches, "cpu", workers=2)
    assert sorted(seen) == sorted(id(b) for b in batches)
    assert all(torch.allclose(one[k], two[k]) for k in one)
    assert torch.get_num_threads() == threads


def test_error_in_a_worker_is_raised_and_threads_restored():
    threads = torch.get_num_threads()

    def fn(b):
        if b == 3:
            raise KeyError("bad batch")

    with pytest.raises(KeyError, match="bad batch"):
        run_batches(fn, list(range(8)), "cpu", workers=2)
    assert torch.get_num_threads() == threads


def test_workers_only_on_a_multicore_cpu():
    assert inference_workers("meta") == 1
    assert inference_workers("cpu") == (2 if torch.get_num_threads() >= 2 else 1)


def test_sorted_batches_cover_every_index_once_longest_first():
    import numpy as np

    from bertkit.predict.inference import sorted_batches

    batches = sorted_batches(np.array([3, 9, 1, 9, 5]), 2)
    assert [b.tolist() for b in batches] == [[1, 3], [4, 0], [2]]


def test_sorted_batches_bound_the_padded_pieces_of_long_items():
    """Plain slices of ``batch_size`` while items are short; long ones go fewer to a batch, so a
    batch never holds more than batch_size x 128 padded pieces (peak memory bounded whatever the
    longest sentence of the input)."""
    import numpy as np

    from bertkit.predict.inference import PIECES_PER_ROW, sorted_batches

    rng = np.random.default_rng(0)
    short = rng.integers(1, PIECES_PER_ROW + 1, size=200)
    plain = np.argsort(-short, kind="stable")
    assert [b.tolist() for b in sorted_batches(short, 32)] == \
        [plain[i:i + 32].tolist() for i in range(0, 200, 32)]
    mixed = np.concatenate([short, rng.integers(129, 513, size=100)])
    batches = sorted_batches(mixed, 32)
    assert sorted(np.concatenate(batches).tolist()) == list(range(300))
    assert max(len(b) * mixed[b].max() for b in batches) <= 32 * PIECES_PER_ROW
    assert len(batches[0]) == 32 * PIECES_PER_ROW // mixed.max()
    assert [len(b) for b in sorted_batches(mixed, 32, max_pieces=10 ** 6)][:3] == [32, 32, 32]
