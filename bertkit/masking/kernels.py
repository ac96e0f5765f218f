"""Compiled masking kernels (numba): whole-word and span masking in one pass per row.

The NumPy formulations in :mod:`bertkit.masking.wwm` and :mod:`bertkit.masking.span` are exact but
spend most of their time in the fixed cost of some 60-100 small array operations per batch; at
batch 32 x 128 that made whole-word masking about 0.55x and span masking about 0.35x the speed of
``DataCollatorForLanguageModeling.torch_mask_tokens``. These kernels run the reference algorithms
(BERT's ``create_pretraining_data.py`` greedy whole-word pass; SpanBERT's sequential span loop,
Joshi et al., 2020, sec. 3.1 and the reference ``masking.py``) as plain loops over each row, in
machine code.

They take every random number as an argument: the maskers draw them from the caller's
``torch.Generator`` with the *same calls, shapes and dtypes, in the same order* as the NumPy path,
so both paths consume the generator identically and give the same masks bit for bit (the tests
check this; ties between equal float32 word keys, about 3e-4 per row, are broken by word position
here, which is one valid reading of "a random order"). Masking therefore stays seeded and a
resumed run stays exact whichever path runs.

Compiled on first use and cached beside this file (``cache=True``; numba falls back to its user
cache directory where that is read-only): the first calls in a fresh environment compile for
about 10 s (2-core machine); later processes import numba and load the cache in about 1.5 s
(``benchmarks/masking.py --jit-cost``). ``nogil=True``: a prefetching
thread masks while the training thread runs. Importing this module imports numba; the maskers do so
lazily, through :func:`bertkit.masking.base.kernels`.

Conventions: ``ids [B, T]`` int64 C-contiguous; word ids are numbered per row over real tokens
(non-real tokens: -1); ``W`` is the most words of a row in the batch.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

IGNORE = -100


@njit(cache=True, nogil=True)
def words(ids, is_real, continues, prob, ceil_rule):  # pragma: no cover - compiled
    """Word structure and budgets of a batch, one pass per row.

    A real piece starts a word unless it continues the real piece before it (as
    :func:`bertkit.masking.base.word_structure`).

    Args:
        ids: ``[B, T]`` int64 token ids.
        is_real / continues: ``[V]`` bool lookup tables (:class:`~bertkit.masking.base.VocabInfo`).
        prob: the masking share (0.15).
        ceil_rule: True: SpanBERT's budget ``min(n, ceil(n p))``; False: BERT's
            ``min(n, max(1, round(n p)))`` (round half to even, as Python's ``round``).

    Returns:
        ``bad`` (-1, or the flat index of the first id outside ``0..V-1``), ``word_id [B, T]``
        int32 (-1 on non-real tokens), ``word_len [B, W + 1]`` int64 (pieces per word, last column
        0), ``word_start [B, W + 1]`` int64 (position of each word's first piece),
        ``n_words [B]`` int64 and ``k [B]`` int64 (the budgets in tokens).
    """
    B, T = ids.shape
    V = is_real.shape[0]
    word_id = np.empty((B, T), np.int32)
    n_words = np.zeros(B, np.int64)
    k = np.zeros(B, np.int64)
    bad = -1
    W = 0
    for b in range(B):
        w = -1
        n = 0
        prev_real = False
        for t in range(T):
            x = ids[b, t]
            if x < 0 or x >= V:
                if bad < 0:
                    bad = b * T + t
                word_id[b, t] = -1
                prev_real = False
                continue
            r = is_real[x]
            if r:
                n += 1
                if not (prev_real and continues[x]):
                    w += 1
                word_id[b, t] = w
            else:
                word_id[b, t] = -1
            prev_real = r
        n_words[b] = w + 1
        if w + 1 > W:
            W = w + 1
        if ceil_rule:
            kb = math.ceil(n * prob - 1e-9)
        else:
            kb = max(1, int(np.rint(n * prob)))
        k[b] = min(n, kb)
    word_len = np.zeros((B, W + 1), np.int64)
    word_start = np.zeros((B, W + 1), np.int64)
    for b in range(B):
        for t in range(T):
            w = word_id[b, t]
            if w >= 0:
                if word_len[b, w] == 0:
                    word_start[b, w] = t
                word_len[b, w] += 1
    return bad, word_id, word_len, word_start, n_words, k


@njit(cache=True, nogil=True)
def _before(keys, a, b):  # pragma: no cover - compiled
    """Word ``a`` is visited before word ``b``: a smaller key, or an equal key and a smaller
    position (a total order, so the visiting order is that of a stable sort)."""
    return keys[a] < keys[b] or (keys[a] == keys[b] and a < b)


@njit(cache=True, nogil=True)
def wwm_choose(word_id, word_len, n_words, k, keys):  # pragma: no cover - compiled
    """BERT's greedy whole-word pass, row by row: words visited by increasing ``keys`` (ties by
    position, as a stable sort), a word taken when all its pieces fit in what is left of the
    budget, else skipped; the pass ends when the budget is met or no unvisited word fits.

    The visiting order is a bucket sort: the keys are uniform in [0, 1), so ``n`` buckets of
    width ``1/n`` hold about one word each; words are placed by bucket in position order, then
    one insertion sort (the array is nearly sorted) orders them by (key, position). About
    ``4n`` cheap steps with few mispredicted branches, several times faster here than a
    comparison sort or a heap of the ~100 words of a row. The pass stops once no unvisited word
    fits in what is left (counts of unvisited words by length); skipping the rest changes
    nothing, since none of them could be taken.

    Args:
        word_id / word_len / n_words / k: from :func:`words`.
        keys: ``[B, W]`` float32 uniform keys in [0, 1) (the random visiting order).

    Returns:
        ``[N]`` int64, the flat indices (row-major) of the chosen pieces.
    """
    B, T = word_id.shape
    W = word_len.shape[1] - 1
    taken = np.zeros(word_len.shape, np.bool_)
    order = np.empty(max(W, 1), np.int64)
    bucket = np.empty(max(W, 1), np.int64)
    start = np.empty(W + 1, np.int64)
    fit = np.zeros(k.max() + 2 if B else 1, np.int64)  # unvisited words by length, capped
    N = 0
    for b in range(B):
        n = n_words[b]
        if n == 0 or k[b] == 0:
            continue
        _visiting_order(keys[b], n, order, bucket, start)
        N += _take_greedy(word_len[b], order, n, k[b], fit, taken[b])
    return _flat_chosen(word_id, taken, N)


@njit(cache=True, nogil=True, inline="always")
def _visiting_order(row, n, order, bucket, start):  # pragma: no cover - compiled
    """Fill ``order[:n]`` with the words ``0..n-1`` of a row by increasing key ``row`` (ties by
    position): a bucket sort (``n`` buckets of width ``1/n``, words placed in position order),
    then one insertion sort of the nearly sorted array. ``bucket`` (``[>= n]``) and ``start``
    (``[>= n + 1]``) are scratch."""
    start[:n + 1] = 0
    for i in range(n):
        j = int(row[i] * n)
        if j >= n:
            j = n - 1
        bucket[i] = j
        start[j + 1] += 1
    for j in range(n):
        start[j + 1] += start[j]
    for i in range(n):
        j = bucket[i]
        order[start[j]] = i
        start[j] += 1
    for p in range(1, n):
        w = order[p]
        q = p - 1
        while q >= 0 and _before(row, w, order[q]):
            order[q + 1] = order[q]
            q -= 1
        order[q + 1] = w


@njit(cache=True, nogil=True, inline="always")
def _take_greedy(lengths, order, n, budget, fit, taken_row):  # pragma: no cover - compiled
    """The greedy pass over one row's ``n`` words in ``order``: a word is taken (``taken_row``
    set) when its ``lengths`` pieces fit in what is left of ``budget``; the pass stops once no
    unvisited word fits (``fit``, ``[>= budget + 2]`` scratch: unvisited words by length, those
    longer than the budget in the last cell). Returns the pieces taken."""
    left = budget
    fit[:left + 2] = 0
    for i in range(n):
        fit[min(lengths[i], left + 1)] += 1
    fitting = n - fit[left + 1]  # unvisited words that still fit
    p = 0
    N = 0
    while fitting > 0:
        w = order[p]
        p += 1
        pieces = lengths[w]
        if pieces <= left:
            taken_row[w] = True
            fit[pieces] -= 1
            left -= pieces
            N += pieces
            fitting = 0
            for size in range(1, left + 1):
                fitting += fit[size]
        elif pieces <= budget:  # too long now: visited, and it never counted in `fitting`
            fit[pieces] -= 1
    return N


@njit(cache=True, nogil=True)
def _flat_chosen(word_id, taken, N):  # pragma: no cover - compiled
    """``[N]`` int64: the flat indices (row-major) of the pieces of the ``taken`` words."""
    B, T = word_id.shape
    chosen = np.empty(N, np.int64)
    j = 0
    for b in range(B):
        for t in range(T):
            w = word_id[b, t]
            if w >= 0 and taken[b, w]:
                chosen[j] = b * T + t
                j += 1
    return chosen


@njit(cache=True, nogil=True)
def span_round(rows, word_id, word_len, n_words, k, done, taken, u, anchor, cdf, max_len,
               lengths_out):  # pragma: no cover - compiled
    """One round of SpanBERT's sequential span loop for the rows still short of their budget.

    For row ``rows[r]`` the K candidates are visited in order: a candidate whose anchor token is
    not real, or lies in a word already masked, is skipped (its drawn length discarded, as in the
    reference); else its length ``L`` in words is the inverse CDF of ``u`` (``cdf``: the
    renormalised truncated geometric law) and it masks the anchor's word and the words after it,
    ``L`` words in all (fewer at the row's last word), words already masked counting too, until
    the budget is met: the word that meets it is cut after the piece that does (in token order),
    and the row is done.

    Args:
        rows: ``[R]`` int64 rows of the batch.
        word_id / word_len / n_words / k: from :func:`words`.
        done: ``[B]`` int64 tokens masked so far, updated.
        taken: ``[B, W + 1]`` int64 pieces masked of each word (0, all, or a cut's first ones),
            updated.
        u: ``[R, K]`` float64 uniforms for the lengths; anchor: ``[R, K]`` int64 positions.
        cdf: ``[max_len]`` float64 cumulative length distribution.
        lengths_out: ``[>= R K]`` int64; receives the lengths of the spans applied, row-major.

    Returns:
        ``hit [R]`` bool (the row met its budget) and the number of lengths written.
    """
    R, K = u.shape
    M = cdf.shape[0]
    hit = np.zeros(R, np.bool_)
    m = 0
    for r in range(R):
        b = rows[r]
        kb = k[b]
        d = done[b]
        nw = n_words[b]
        for c in range(K):
            w = word_id[b, anchor[r, c]]
            if w < 0 or taken[b, w] > 0:
                continue
            uu = u[r, c]
            size = 1
            for i in range(M):  # searchsorted(cdf, u, side="right") + 1
                if cdf[i] <= uu:
                    size += 1
            if size > max_len:
                size = max_len
            lengths_out[m] = size
            m += 1
            end = min(w + size, nw)
            for ww in range(w, end):
                if taken[b, ww] > 0:
                    continue
                need = kb - d
                wl = word_len[b, ww]
                if wl >= need:
                    taken[b, ww] = need
                    d = kb
                    hit[r] = True
                    break
                taken[b, ww] = wl
                d += wl
            if hit[r]:
                break
        done[b] = d
    return hit, m


@njit(cache=True, nogil=True)
def span_runs(word_id, word_start, taken):  # pragma: no cover - compiled
    """The masked positions of span masking, their merged spans and SBO boundaries.

    A piece is masked when it is among the ``taken`` first pieces of its word. Consecutive
    masked positions of a row form one merged span s..e; its SBO boundaries (Joshi et al., 2020,
    sec. 3.2) are (s-1, e+1) when both are real tokens of the row, else -1 (as
    :func:`bertkit.masking.span.boundaries_and_runs`).

    Returns:
        ``chosen [N]`` int64 flat indices (row-major), ``run [N]`` int64 the merged span of each
        (0..S-1, row-major), ``boundaries [B, T, 2]`` int64 and S.
    """
    B, T = word_id.shape
    masked = np.zeros((B, T), np.bool_)
    N = 0
    for b in range(B):
        for t in range(T):
            w = word_id[b, t]
            if w >= 0 and t - word_start[b, w] < taken[b, w]:
                masked[b, t] = True
                N += 1
    chosen = np.empty(N, np.int64)
    run = np.empty(N, np.int64)
    boundaries = np.full((B, T, 2), -1, np.int64)
    j = 0
    S = 0
    for b in range(B):
        t = 0
        while t < T:
            if not masked[b, t]:
                t += 1
                continue
            s = t
            while t < T and masked[b, t]:
                chosen[j] = b * T + t
                run[j] = S
                j += 1
                t += 1
            e = t - 1
            if s > 0 and e < T - 1 and word_id[b, s - 1] >= 0 and word_id[b, e + 1] >= 0:
                for p in range(s, e + 1):
                    boundaries[b, p, 0] = s - 1
                    boundaries[b, p, 1] = e + 1
            S += 1
    return chosen, run, boundaries, S


@njit(cache=True, nogil=True)
def replace(ids, chosen, u, run, mask_id, t_mask, t_random, random_kind, pick, normal_ids,
            u_random, cdf):  # pragma: no cover - compiled
    """BERT's 80/10/10 on the chosen positions (as :func:`bertkit.masking.base.replace`).

    Position ``chosen[i]`` gets ``[MASK]`` if ``v < t_mask``, a random token if ``v < t_random``,
    else keeps its id, where ``v = u[run[i]]`` (one draw per span) or ``u[i]`` when ``run`` is
    empty. The thresholds are float32, as NumPy compares a float32 array with a Python float.

    Args:
        ids: ``[B, T]`` int64.
        random_kind: 0: no random tokens; 1: ``normal_ids[pick[i]]`` (uniform); 2: the corpus
            unigram law, ``min(searchsorted(cdf, u_random[i]), V - 1)`` with V = ``cdf.size``.

    Returns:
        ``inputs [B, T]`` and ``labels [B, T]`` int64 (-100 off the chosen positions).
    """
    B, T = ids.shape
    inputs = ids.copy()
    labels = np.full((B, T), IGNORE, np.int64)
    flat_in = inputs.reshape(-1)
    flat_lab = labels.reshape(-1)
    flat_ids = ids.reshape(-1)
    per_span = run.shape[0] > 0
    V = cdf.shape[0]
    for i in range(chosen.shape[0]):
        c = chosen[i]
        original = flat_ids[c]
        flat_lab[c] = original
        v = u[run[i]] if per_span else u[i]
        if v < t_mask:
            flat_in[c] = mask_id
        elif random_kind != 0 and v < t_random:
            if random_kind == 1:
                flat_in[c] = normal_ids[pick[i]]
            else:
                flat_in[c] = min(np.searchsorted(cdf, u_random[i]), V - 1)
    return inputs, labels
