"""Maximum spanning tree decoding: Chu-Liu/Edmonds with the single-root constraint.

Conventions (all functions here): a sentence of ``n`` words has nodes ``0..n`` where 0 is the
artificial root; ``scores`` is ``[n+1, n+1]`` with ``scores[d, h]`` the score of attaching
dependent ``d`` to head ``h`` (row 0 is ignored); a tree is ``heads`` ``[n+1]`` int64 with
``heads[d]`` the head of ``d`` and ``heads[0] = 0`` (unused).

References: Chu & Liu (1965), Edmonds (1967); the recursive contraction follows Dozat, Qi & Manning
(2017, Stanford's CoNLL 2017 parser, ``chuliu_edmonds``). The single-root constraint (exactly one
word attached to the root, as UD requires) is enforced exactly: if the unconstrained optimum has
several root children, every candidate root word ``r`` is tried with only the arc ``r -> 0`` allowed
from the root, in the order of an upper bound on its best tree, stopping once no remaining
candidate's bound can beat the best tree found (cf. Zmigrod, Vieira & Cotterell 2020, "Please Mind
the Root").
"""

from __future__ import annotations

import numpy as np

NEG = -1e30


def find_cycle(heads: np.ndarray) -> np.ndarray | None:
    """One cycle of the head graph, as a ``[n+1]`` bool mask, or None when there is none.

    ``heads`` ``[n+1]`` int; node 0 is the root and is never on a cycle. O(n).
    """
    n1 = len(heads)
    state = np.zeros(n1, dtype=np.int64)  # 0 unseen, 1 on the current path, 2 done
    state[0] = 2
    for start in range(1, n1):
        if state[start]:
            continue
        path = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = int(heads[node])
        if state[node] == 1:  # closed a cycle on the current path
            mask = np.zeros(n1, dtype=bool)
            mask[path[path.index(node):]] = True
            return mask
        state[path] = 2
    return None


def is_tree(heads: np.ndarray) -> bool:
    """Whether ``heads`` (``[n]`` 1-based heads of words 1..n, 0 = root) is a well-formed tree:
    every head in ``0..n``, no self-loop, exactly one word attached to the root, no cycle."""
    heads = np.asarray(heads, dtype=np.int64)
    n = len(heads)
    if n == 0:
        return True
    if heads.min() < 0 or heads.max() > n or (heads == np.arange(1, n + 1)).any():
        return False
    if int((heads == 0).sum()) != 1:
        return False
    return find_cycle(np.concatenate([[0], heads])) is None


def _chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
    """Unconstrained maximum spanning arborescence rooted at 0 (may give the root several children).

    ``scores`` ``[m, m]`` float64 with self-loops and row 0 already masked; returns ``[m]`` heads.
    """
    heads = scores.argmax(1)
    heads[0] = 0
    cycle = find_cycle(heads)
    if cycle is None:
        return heads
    cyc = np.flatnonzero(cycle)
    rest = np.flatnonzero(~cycle)  # includes the root 0
    cyc_heads = heads[cyc]
    cyc_scores = scores[cyc, cyc_heads]
    total = cyc_scores.sum()
    # entering the cycle at c from outside h: replaces c's cycle arc
    enter = scores[np.ix_(cyc, rest)] - cyc_scores[:, None] + total  # [|cyc|, |rest|]
    enter_at = enter.argmax(0)                                        # best cycle node per head
    leave = scores[np.ix_(rest, cyc)]                                 # [|rest|, |cyc|]
    leave_from = leave.argmax(1)                                      # best cycle head per dep
    m = len(rest)
    sub = np.full((m + 1, m + 1), NEG)
    sub[:m, :m] = scores[np.ix_(rest, rest)]
    sub[m, :m] = enter[enter_at, np.arange(m)]
    sub[:m, m] = leave[np.arange(m), leave_from]
    sub[0, :] = NEG
    sub[m, m] = NEG
    sub_heads = _chu_liu_edmonds(sub)
    out = heads.copy()
    inner = sub_heads[:m] < m
    out[rest[inner]] = rest[sub_heads[:m][inner]]
    out[rest[~inner]] = cyc[leave_from[~inner]]
    out[cyc] = cyc_heads
    h = sub_heads[m]
    out[cyc[enter_at[h]]] = rest[h]
    out[0] = 0
    return out


def _prepare(scores: np.ndarray) -> np.ndarray:
    s = np.array(scores, dtype=np.float64, copy=True)
    s[~np.isfinite(s)] = NEG
    np.fill_diagonal(s, NEG)
    s[0, :] = NEG
    return s


def _score(s: np.ndarray, heads: np.ndarray) -> float:
    return float(s[np.arange(1, len(heads)), heads[1:]].sum())


def mst_decode(scores: np.ndarray) -> np.ndarray:
    """Best single-root dependency tree of one sentence (see module docstring).

    Args:
        scores: ``[n+1, n+1]`` arc scores, ``scores[d, h]`` for head ``h`` of dependent ``d``
            (log-probabilities or raw scores; ``-inf`` forbids an arc).

    Returns:
        ``[n]`` int64 heads of words ``1..n`` (0 = root): always a tree with exactly one root child.
    """
    s = _prepare(scores)
    n1 = len(s)
    if n1 <= 1:
        return np.zeros(0, dtype=np.int64)
    heads = _chu_liu_edmonds(s)
    roots = np.flatnonzero(heads[1:] == 0) + 1
    if len(roots) == 1:
        return heads[1:].astype(np.int64)
    # upper bound for root r: its root arc plus every other word's best non-root head
    best_nonroot = s[1:, 1:].max(1)                                   # [n]
    bound = s[1:, 0] + best_nonroot.sum() - best_nonroot              # [n]
    best, best_score = None, -np.inf
    for r in np.argsort(-bound, kind="stable") + 1:
        if bound[r - 1] <= best_score:
            break
        t = s.copy()
        t[1:, 0] = NEG
        t[r, 0] = s[r, 0]
        cand = _chu_liu_edmonds(t)
        sc = _score(s, cand)
        if sc > best_score and int((cand[1:] == 0).sum()) == 1:
            best, best_score = cand, sc
    return best[1:].astype(np.int64)


def mst_decode_batch(scores: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """:func:`mst_decode` for each sentence of a padded batch ``[B, N+1, N+1]`` with ``lengths``
    ``[B]`` words; returns ``B`` arrays of heads ``[n_b]``."""
    return [mst_decode(scores[b, :n + 1, :n + 1]) for b, n in enumerate(lengths)]
