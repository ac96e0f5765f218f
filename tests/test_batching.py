"""Shared batching helpers: right-padding matches a per-row loop."""

import numpy as np

from bertkit.inputs.batching import pad_right


def test_pad_right_matches_a_loop_and_keeps_int64():
    rng = np.random.default_rng(0)
    seqs = [rng.integers(1, 100, size=n) for n in (3, 1, 7, 7, 2)]
    ids, mask = pad_right(seqs, pad_id=-5)
    assert ids.shape == mask.shape == (5, 7) and ids.dtype == np.int64 and mask.dtype == bool
    for row, m, s in zip(ids, mask, seqs):
        assert row[:len(s)].tolist() == s.tolist() and (row[len(s):] == -5).all()
        assert m.sum() == len(s) and m[:len(s)].all()
    ids, mask = pad_right([[4, 2]], 0)  # lists too, one row
    assert ids.tolist() == [[4, 2]] and mask.all()
