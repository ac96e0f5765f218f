"""Eisner's projective decoder: optimal among projective single-root trees."""

import itertools

import numpy as np
import pytest

from bertkit.decoding.eisner import eisner_decode, is_projective
from bertkit.decoding.mst import is_tree, mst_decode


def best_projective(scores):
    n = len(scores) - 1
    best = -np.inf
    for heads in itertools.product(range(n + 1), repeat=n):
        h = np.asarray(heads)
        if is_tree(h) and is_projective(h):
            best = max(best, scores[np.arange(1, n + 1), h].sum())
    return best


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_eisner_is_the_best_projective_tree(n):
    rng = np.random.default_rng(10 + n)
    for _ in range(40 if n < 5 else 20):
        s = rng.normal(size=(n + 1, n + 1))
        heads = eisner_decode(s)
        assert is_tree(heads) and is_projective(heads)
        assert s[np.arange(1, n + 1), heads].sum() == pytest.approx(best_projective(s))


def test_eisner_avoids_the_non_projective_optimum():
    # the MST crosses (2 -> 4 over 3's arc to 1); Eisner must return a projective tree
    s = np.full((5, 5), -10.0)
    s[1, 0], s[3, 1], s[2, 4], s[4, 1] = 5.0, 5.0, 5.0, 5.0
    mst = mst_decode(s)
    assert mst.tolist() == [0, 4, 1, 1] and not is_projective(mst)
    heads = eisner_decode(s)
    assert is_tree(heads) and is_projective(heads)


def test_is_projective():
    assert is_projective(np.array([2, 0, 2]))
    assert not is_projective(np.array([0, 4, 1, 1]))
    assert not is_projective(np.array([3, 0, 2, 1]))  # 1 -> 3 and 2 <- ... 4 -> 1 crosses
