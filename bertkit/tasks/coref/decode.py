"""Span pruning and cluster decoding of the span-ranking coreference model (numpy, no torch).

* :func:`prune_spans`: the ``k`` best-scoring candidate spans that cross no better one (Lee et
  al., 2017, §5: "we do not consider spans that cross an accepted span"; nesting is allowed).
* :func:`clusters_from_antecedents`: each kept span links to its best antecedent or to none (the
  dummy, score 0); links form the clusters (Lee et al., 2017, §4, greedy left-to-right).
"""

from __future__ import annotations

import numpy as np


def prune_spans(starts: np.ndarray, ends: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of at most ``k`` spans, best score first accepted, none crossing an accepted one
    (``s1 < s2 <= e1 < e2``); returned sorted by (start, end).

    Args:
        starts / ends: ``[N]`` int span bounds (inclusive); scores: ``[N]`` float.

    >>> prune_spans(np.array([0, 1, 3]), np.array([2, 3, 3]), np.array([3.0, 2.0, 1.0]), 3)
    array([0, 2])
    """
    order = np.argsort(-scores, kind="stable")
    kept: list[int] = []
    ks, ke = np.empty(0, np.int64), np.empty(0, np.int64)
    for i in order:
        if len(kept) >= k:
            break
        s, e = starts[i], ends[i]
        if len(kept) and np.any(((ks < s) & (s <= ke) & (ke < e)) | ((s < ks) & (ks <= e) & (e < ke))):
            continue
        kept.append(int(i))
        ks, ke = np.append(ks, s), np.append(ke, e)
    kept_arr = np.asarray(kept, dtype=np.int64)
    return kept_arr[np.lexsort((ends[kept_arr], starts[kept_arr]))] if len(kept) else kept_arr


def clusters_from_antecedents(spans: np.ndarray, antecedent: np.ndarray, mention: np.ndarray,
                              singletons: bool = True) -> list[list[tuple[int, int]]]:
    """Clusters from each span's chosen antecedent.

    Args:
        spans: ``[K, 2]`` kept spans sorted by (start, end).
        antecedent: ``[K]`` index of the chosen earlier span, -1 for none (the dummy).
        mention: ``[K]`` bool: the span is a mention by its own score (> 0); with ``singletons``
            such a span that links to nothing and is linked by nothing is a one-mention entity.

    Returns:
        clusters of ``(start, end)`` mentions, each sorted, ordered by first mention.

    >>> clusters_from_antecedents(np.array([[0, 0], [2, 3], [5, 5]]), np.array([-1, 0, -1]),
    ...                           np.array([True, True, True]))
    [[(0, 0), (2, 3)], [(5, 5)]]
    """
    cluster = np.full(len(spans), -1)
    groups: list[list[int]] = []
    for q, a in enumerate(antecedent):
        if a < 0:
            continue
        if cluster[a] < 0:
            cluster[a] = len(groups)
            groups.append([int(a)])
        cluster[q] = cluster[a]
        groups[cluster[a]].append(q)
    if singletons:
        for q in np.nonzero((cluster < 0) & mention)[0]:
            groups.append([int(q)])
    out = [sorted((int(spans[i, 0]), int(spans[i, 1])) for i in g) for g in groups]
    return sorted(out, key=lambda c: c[0])
