"""Span pruning, cluster decoding and segmenting against brute force on small cases."""

import itertools

import numpy as np

from bertkit.tasks.coref.decode import clusters_from_antecedents, prune_spans
from bertkit.tasks.coref.encoding import segment_bounds


def _crosses(a, b):
    return a[0] < b[0] <= a[1] < b[1] or b[0] < a[0] <= b[1] < a[1]


def test_prune_spans_matches_greedy_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        starts = rng.integers(0, 6, n)
        ends = starts + rng.integers(0, 4, n)
        scores = rng.normal(size=n)
        k = int(rng.integers(1, n + 1))
        kept = prune_spans(starts, ends, scores, k)
        # brute force: walk spans best first, keep one unless it crosses a kept one
        want = []
        for i in sorted(range(n), key=lambda i: (-scores[i], i)):
            if len(want) < k and not any(_crosses((starts[i], ends[i]), (starts[j], ends[j]))
                                         for j in want):
                want.append(i)
        assert sorted(kept.tolist()) == sorted(want)
        spans = [(starts[i], ends[i]) for i in kept]
        assert spans == sorted(spans)
        assert not any(_crosses(a, b) for a, b in itertools.combinations(spans, 2))


def test_clusters_follow_antecedent_chains_and_singletons():
    spans = np.array([[0, 0], [1, 2], [4, 4], [6, 6], [8, 9]])
    # 2 -> 0, 3 -> 2 (chain), 4 -> 1; nothing links 1 except 4
    antecedent = np.array([-1, -1, 0, 2, 1])
    mention = np.array([True, False, True, True, True])
    assert clusters_from_antecedents(spans, antecedent, mention) == [
        [(0, 0), (4, 4), (6, 6)], [(1, 2), (8, 9)]]
    # span 0 alone is a mention and a singleton only with singletons on
    alone = np.array([-1, -1, -1, -1, -1])
    assert clusters_from_antecedents(spans, alone, mention) == [[(0, 0)], [(4, 4)], [(6, 6)],
                                                                [(8, 9)]]
    assert clusters_from_antecedents(spans, alone, mention, singletons=False) == []


def test_segments_cover_every_word_within_budget_and_prefer_sentence_ends():
    rng = np.random.default_rng(1)
    for _ in range(100):
        W = int(rng.integers(1, 60))
        counts = rng.integers(1, 5, W)
        sentence = np.cumsum(rng.random(W) < 0.2)
        budget = int(rng.integers(4, 20))
        bounds = segment_bounds(counts, sentence, budget)
        assert bounds[0][0] == 0 and bounds[-1][1] == W
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        for a, b in bounds:
            assert b > a
            assert counts[a:b].clip(max=budget).sum() <= budget or b == a + 1
            if b < W:  # a cut inside a sentence only when no sentence ends in the segment
                ends = [w for w in range(a, b) if sentence[w + 1] != sentence[w]]
                assert sentence[b] != sentence[b - 1] or not ends
