"""Masked positions at a fixed count per row: the training step's gather needs no host sync and
has one shape per batch shape, and nothing labelled is lost."""

import pytest
import torch

from bertkit.masking import IGNORE, check_capacity, mask_capacity, static_positions


def test_static_positions_keep_every_label_in_order():
    g = torch.Generator().manual_seed(0)
    labels = torch.full((6, 40), IGNORE)
    for b in range(6):
        n = int(torch.randint(0, 7, (1,), generator=g))
        where = torch.randperm(40, generator=g)[:n]
        labels[b, where] = torch.randint(5, 100, (n,), generator=g)
    pos, tgt = static_positions(labels, 6)
    assert pos.shape == tgt.shape == (6, 6)
    for b in range(6):
        real = (labels[b] != IGNORE).nonzero().flatten()
        n = len(real)
        assert pos[b, :n].tolist() == real.tolist()  # ascending, as boolean indexing gives
        assert tgt[b, :n].tolist() == labels[b, real].tolist()
        assert (tgt[b, n:] == IGNORE).all()  # fillers are ignored by the loss


def test_capacity_bounds_every_strategys_budget_and_is_checked():
    # round (token, wwm) and ceil (span) budgets of n <= T real tokens never exceed it
    import math
    for T in (8, 33, 128, 512):
        for p in (0.15, 0.2, 0.4):
            k = mask_capacity(T, p)
            assert all(max(1, round(n * p)) <= k and math.ceil(n * p - 1e-9) <= k
                       for n in range(1, T + 1))
    assert mask_capacity(128, 0.15) == 20  # BERT's max_predictions_per_seq at T = 128
    labels = torch.full((2, 10), IGNORE)
    labels[1, :4] = 7
    check_capacity(labels, 4)
    with pytest.raises(ValueError, match="4 masked tokens, more than the capacity 3"):
        check_capacity(labels, 3)
