"""Projective decoding: Eisner's (1996) O(n^3) algorithm with the single-root constraint.

Same conventions as :mod:`bertkit.decoding.mst`: ``scores[d, h]`` ``[n+1, n+1]``, node 0 the root.
Charts (``i < j``): ``I_r[i, j]`` incomplete span with arc ``i -> j`` (head ``i``), ``I_l[i, j]``
incomplete span with arc ``j -> i`` (head ``j``), ``C_r[i, j]`` complete span headed by ``i``,
``C_l[i, j]`` complete span headed by ``j``. Each span width is filled in one vectorised step over
all start positions and split points. The root gets exactly one child by allowing the complete
root span ``C_r[0, j]`` only for ``j = n`` (as in SuPar's ``eisner``, Zhang et al. 2020).
"""

from __future__ import annotations

import numpy as np

from bertkit.decoding.mst import NEG


def eisner_decode(scores: np.ndarray) -> np.ndarray:
    """Best projective single-root tree of one sentence.

    Args:
        scores: ``[n+1, n+1]`` arc scores, ``scores[d, h]`` for head ``h`` of dependent ``d``.

    Returns:
        ``[n]`` int64 heads of words ``1..n`` (0 = root): a projective tree with one root child.
    """
    s = np.array(scores, dtype=np.float64, copy=True)
    s[~np.isfinite(s)] = NEG
    n1 = len(s)
    if n1 <= 1:
        return np.zeros(0, dtype=np.int64)
    n = n1 - 1
    arc = s.T  # arc[h, d]
    I_r = np.full((n1, n1), NEG)
    I_l = np.full((n1, n1), NEG)
    C_r = np.full((n1, n1), NEG)
    C_l = np.full((n1, n1), NEG)
    np.fill_diagonal(C_r, 0.0)
    np.fill_diagonal(C_l, 0.0)
    bI = np.zeros((n1, n1), dtype=np.int64)   # split point of I spans (shared by I_l and I_r)
    bCl = np.zeros((n1, n1), dtype=np.int64)
    bCr = np.zeros((n1, n1), dtype=np.int64)
    for w in range(1, n1):
        i = np.arange(n1 - w)
        j = i + w
        k = i[:, None] + np.arange(w)[None, :]                  # r in [i, j-1]
        inc = C_r[i[:, None], k] + C_l[k + 1, j[:, None]]        # [spans, w]
        r = inc.argmax(1)
        best = inc[np.arange(len(i)), r]
        bI[i, j] = i + r
        I_l[i, j] = best + arc[j, i]
        I_r[i, j] = best + arc[i, j]
        I_l[0, w] = NEG  # the root is never a dependent
        cl = C_l[i[:, None], k] + I_l[k, j[:, None]]            # r in [i, j-1]
        r = cl.argmax(1)
        C_l[i, j] = cl[np.arange(len(i)), r]
        bCl[i, j] = i + r
        k2 = k + 1                                               # r in [i+1, j]
        cr = I_r[i[:, None], k2] + C_r[k2, j[:, None]]
        r = cr.argmax(1)
        C_r[i, j] = cr[np.arange(len(i)), r]
        bCr[i, j] = i + 1 + r
        if w != n:
            C_r[0, w] = NEG  # root's complete span only over the whole sentence: one root child
    heads = np.zeros(n1, dtype=np.int64)
    stack = [("C_r", 0, n)]
    while stack:
        kind, i, j = stack.pop()
        if i == j:
            continue
        if kind == "C_r":
            r = bCr[i, j]
            stack += [("I_r", i, r), ("C_r", r, j)]
        elif kind == "C_l":
            r = bCl[i, j]
            stack += [("C_l", i, r), ("I_l", r, j)]
        else:
            r = bI[i, j]
            if kind == "I_r":
                heads[j] = i
            else:
                heads[i] = j
            stack += [("C_r", i, r), ("C_l", r + 1, j)]
    return heads[1:]


def is_projective(heads: np.ndarray) -> bool:
    """Whether the tree ``heads`` (``[n]``, 1-based, 0 = root) has no crossing arcs (root arc
    included), checked for all arc pairs at once."""
    heads = np.asarray(heads, dtype=np.int64)
    if len(heads) < 2:
        return True
    d = np.arange(1, len(heads) + 1)
    lo, hi = np.minimum(heads, d), np.maximum(heads, d)
    cross = (lo[:, None] < lo[None, :]) & (lo[None, :] < hi[:, None]) & (hi[:, None] < hi[None, :])
    return not bool(cross.any())
