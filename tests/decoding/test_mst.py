"""Chu-Liu/Edmonds with the single-root constraint against brute force."""

import itertools

import numpy as np
import pytest

from bertkit.decoding.mst import find_cycle, is_tree, mst_decode, mst_decode_batch


def brute_force(scores):
    """Best single-root tree by enumerating every head assignment (n <= 5)."""
    n = len(scores) - 1
    best, best_score = None, -np.inf
    for heads in itertools.product(range(n + 1), repeat=n):
        h = np.asarray(heads)
        if not is_tree(h):
            continue
        sc = scores[np.arange(1, n + 1), h].sum()
        if sc > best_score:
            best, best_score = h, sc
    return best, best_score


def tree_score(scores, heads):
    return scores[np.arange(1, len(heads) + 1), heads].sum()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_random_matrices_match_brute_force(n):
    rng = np.random.default_rng(n)
    for _ in range(60 if n < 5 else 25):
        scores = rng.normal(size=(n + 1, n + 1))
        heads = mst_decode(scores)
        assert is_tree(heads)
        _, best = brute_force(scores)
        assert tree_score(scores, heads) == pytest.approx(best)


def test_greedy_cycle_is_broken_optimally():
    # greedy heads: 1<-2, 2<-1 (a cycle), 3<-2; the root scores are low
    s = np.full((4, 4), -5.0)
    s[1, 2], s[2, 1], s[3, 2] = 10.0, 9.0, 8.0
    s[1, 0], s[2, 0] = 1.0, 3.0
    greedy = s[1:].argmax(1)
    assert greedy.tolist() == [2, 1, 2]  # cycle 1 <-> 2
    heads = mst_decode(s)
    assert heads.tolist() == [2, 0, 2]
    assert tree_score(s, heads) == pytest.approx(brute_force(s)[1])


def test_several_greedy_roots_give_one_root():
    s = np.full((5, 5), -2.0)
    s[1:, 0] = [5.0, 4.0, 6.0, 1.0]  # every word prefers the root
    s[1, 3], s[2, 3], s[4, 3] = 3.0, 2.0, 4.0
    heads = mst_decode(s)
    assert (heads == 0).sum() == 1 and is_tree(heads)
    assert heads.tolist() == [3, 3, 0, 3]
    assert tree_score(s, heads) == pytest.approx(brute_force(s)[1])


def test_forbidden_arcs_and_batch():
    s = np.zeros((4, 4))
    s[:, 0] = -np.inf
    s[2, 0] = 0.0  # only word 2 may attach to the root
    assert mst_decode(s)[1] == 0
    batch = np.random.default_rng(0).normal(size=(2, 6, 6))
    out = mst_decode_batch(batch, np.array([5, 2]))
    assert [len(h) for h in out] == [5, 2] and all(is_tree(h) for h in out)


def test_find_cycle_and_is_tree():
    assert find_cycle(np.array([0, 2, 3, 1])).tolist() == [False, True, True, True]
    assert find_cycle(np.array([0, 0, 1, 2])) is None
    assert is_tree(np.array([0, 1, 2]))
    assert not is_tree(np.array([0, 0, 2]))      # two roots
    assert not is_tree(np.array([2, 1, 0]))      # cycle 1 <-> 2
    assert not is_tree(np.array([0, 2]))         # self-loop
