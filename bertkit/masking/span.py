"""SpanBERT's span masking (Joshi et al., 2020, sec. 3.1 and the reference ``masking.py``).

Per row the budget is ``ceil(p * n)`` of its ``n`` real tokens. Spans are drawn one after the
other: a length in words from a geometric distribution (p = 0.2) truncated to 1..10 and
renormalised (mean 3.8 words), and an anchor token chosen uniformly, snapped to the start of its
word; the span then covers that word and the following ones, complete words, until it has its
length or the budget is met (a final span may be cut by the budget, as in the reference, so the
budget is met exactly and never exceeded). A span whose anchor word is already masked is skipped,
as in the reference. Overlapping or adjacent spans merge; the 80/10/10 replacement is decided
once per merged span, and random replacements are drawn from the corpus unigram distribution.

Vectorised, no loop per token or per span: a round draws K candidate spans for every row at once
(``[B, T, K]`` interval masks), finds for each position the first candidate covering it (a
minimum over candidates), counts the masked tokens after each candidate from a histogram of
those, picks per row the first candidate that reaches the budget and cuts it there. Rows still
short (rare) get another round. Anchors are drawn uniformly over positions and a candidate whose
anchor falls on a special token is dropped, which makes them uniform over real tokens. The skip
test uses the earlier candidates before skipping (a superset of the reference's, so a few more
candidates are skipped; drawn lengths are unaffected).
"""

from __future__ import annotations

import math

import torch

from bertkit.masking.base import (MaskedBatch, Masker, VocabInfo, budget, real_tokens, replace,
                                  word_starts)
from bertkit.errors import BertkitError

MAX_SBO_TARGETS = 15


def span_length_distribution(p: float = 0.2, max_len: int = 10) -> torch.Tensor:
    """``[max_len]`` float64: P(L = 1..max_len) of Geo(p) truncated to 1..max_len, renormalised."""
    k = torch.arange(1, max_len + 1, dtype=torch.float64)
    pmf = p * (1 - p) ** (k - 1)
    return pmf / pmf.sum()


def sample_span_lengths(shape: tuple[int, ...], p: float, max_len: int,
                        generator: torch.Generator) -> torch.Tensor:
    """Span lengths in words, Geo(p) truncated to 1..max_len and renormalised, by the inverse CDF:
    ``L = floor(log(1 - u (1 - (1-p)^max_len)) / log(1-p)) + 1`` for uniform u (p = 1: always 1)."""
    u = torch.rand(shape, generator=generator, dtype=torch.float64)
    if p >= 1:
        return torch.ones(shape, dtype=torch.long)
    q = math.log1p(-p)
    top = -math.expm1(max_len * q)  # 1 - (1-p)^max_len
    lengths = torch.floor(torch.log1p(-u * top) / q).long() + 1
    return lengths.clamp(1, max_len)


def draw_span_masks(real: torch.Tensor, starts: torch.Tensor, k: torch.Tensor, p: float,
                    max_len: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Choose the masked positions of span masking (see the module docstring).

    Args:
        real: ``[B, T]`` bool, maskable tokens.
        starts: ``[B, T]`` bool, real tokens that begin a word.
        k: ``[B]`` long, the budget of each row (``<= real.sum(1)``).
        p / max_len: span lengths in words ~ Geo(p) truncated to 1..max_len.

    Returns:
        ``mask [B, T]`` bool (exactly ``k[b]`` real tokens per row) and ``lengths [S]`` long,
        the drawn lengths of the spans applied.
    """
    B, T = real.shape
    pos = torch.arange(T)
    word_id = starts.long().cumsum(1) - 1
    n_words = starts.sum(1)
    first = torch.full((B, T + 1), T, dtype=torch.long)  # first position of word w; T past the end
    first.scatter_(1, torch.where(starts, word_id, T), torch.where(starts, pos.expand(B, T), T))
    first[:, T] = T
    mask = torch.zeros_like(real)
    drawn = []
    short = (k > 0) & (n_words > 0)
    for _ in range(1000):  # one round nearly always suffices
        if not short.any():
            break
        every = bool(short.all())
        rows = None if every else torch.nonzero(short).squeeze(1)
        pick = (lambda t: t) if every else (lambda t: t[rows])  # noqa: E731
        base, kr = pick(mask), pick(k)
        need = int((kr - base.sum(1)).max())
        K = min(max(4, math.ceil(need / 2.5) + 3), 250)
        R = base.shape[0]
        lengths = sample_span_lengths((R, K), p, max_len, generator)
        anchor = torch.randint(T, (R, K), generator=generator)
        missed = ~pick(real).gather(1, anchor)  # an anchor on a special token: dropped, so
        w = pick(word_id).gather(1, anchor).clamp(min=0)  # anchors are uniform over real tokens
        row_first = pick(first)
        s = row_first.gather(1, w)
        e = row_first.gather(1, torch.minimum(w + lengths, pick(n_words)[:, None]))
        e = torch.where(missed, s, e)  # a dropped candidate covers nothing
        # [R, T, K] with the candidates last (a contiguous, small-int reduction is fast)
        cand = (pos[:, None] >= s[:, None, :]) & (pos[:, None] < e[:, None, :])
        kk = torch.arange(K, dtype=torch.uint8)
        none = torch.tensor(K, dtype=torch.uint8)
        # the first candidate covering each position (-1: masked before this round; K: none)
        cover = torch.where(cand, kk, none).amin(2).long()
        cover = torch.where(base, -1, cover)
        skip = (cover.gather(1, s) < torch.arange(K)) | missed  # anchor word covered earlier
        cover = torch.where(cand & ~skip[:, None, :], kk, none).amin(2).long()
        cover = torch.where(base, -1, torch.where(pick(real), cover, K))
        hist = torch.zeros(R, K + 2, dtype=torch.long).scatter_add_(1, cover + 1, torch.ones_like(cover))
        count = hist.cumsum(1)[:, 1:K + 1]  # [R, K]: masked tokens after candidate k
        reached = count >= kr[:, None]
        hit = reached.any(1)
        kstar = torch.where(hit, reached.long().argmax(1), K - 1)
        prev = cover < kstar[:, None]
        new = cover == kstar[:, None]
        room = kr - prev.sum(1)
        new &= new.long().cumsum(1) <= room[:, None]
        out = prev | new
        if every:
            mask = out
        else:
            mask[rows] = out
        drawn.append(lengths[(torch.arange(K) <= kstar[:, None]) & ~skip])
        short = (mask.sum(1) < k) & (n_words > 0)
    if drawn:
        return mask, torch.cat(drawn)
    return mask, torch.zeros(0, dtype=torch.long)


def span_runs(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Maximal runs of consecutive masked positions (merged spans).

    Returns:
        ``row [S]``, ``start [S]``, ``end [S]`` (inclusive), row-major order.
    """
    B, T = mask.shape
    before = torch.zeros_like(mask)
    before[:, 1:] = mask[:, :-1]
    after = torch.zeros_like(mask)
    after[:, :-1] = mask[:, 1:]
    row, start = torch.nonzero(mask & ~before, as_tuple=True)
    _, end = torch.nonzero(mask & ~after, as_tuple=True)
    return row, start, end


def sbo_targets(real: torch.Tensor, row: torch.Tensor, start: torch.Tensor, end: torch.Tensor,
                max_targets: int = MAX_SBO_TARGETS) -> torch.Tensor:
    """SBO targets of merged spans (SpanBERT sec. 3.2): for span s..e, its first ``max_targets``
    tokens, each predicted from the boundary tokens s-1 and e+1. A span whose boundary is not a
    real token (it touches the sequence edge, ``[CLS]``/``[SEP]``) has no target.

    Returns:
        ``[M, 5]`` long: (row, position, s-1, e+1, position - s).
    """
    T = real.shape[1]
    left, right = start - 1, end + 1
    ok = (left >= 0) & (right < T)
    ok &= real[row, left.clamp(min=0)] & real[row, right.clamp(max=T - 1)]
    row, start, left, right = row[ok], start[ok], left[ok], right[ok]
    n = torch.minimum(right - start, torch.full_like(start, max_targets))
    total = int(n.sum())
    idx = torch.repeat_interleave(torch.arange(len(n)), n)
    rel = torch.arange(total) - torch.repeat_interleave(n.cumsum(0) - n, n)
    return torch.stack([row[idx], start[idx] + rel, left[idx], right[idx], rel], 1)


class SpanMasker(Masker):
    """SpanBERT span masking; see the module docstring.

    Args:
        span_p: geometric parameter of the span length (0.2, the paper's value).
        max_span_length: longest span in words (10).
        max_sbo_targets: SBO targets per span (15).
    """

    name = "span"

    def __init__(self, vocab: VocabInfo, mask_prob: float = 0.15, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1, span_p: float = 0.2, max_span_length: int = 10,
                 max_sbo_targets: int = MAX_SBO_TARGETS) -> None:
        super().__init__(vocab, mask_prob, mask_replace_prob, random_replace_prob)
        if not 0 < span_p <= 1:
            raise BertkitError(f"--span-p is {span_p}", expected="a number in (0, 1]")
        if max_span_length < 1:
            raise BertkitError(f"--max-span-length is {max_span_length}", expected="an integer >= 1")
        self.span_p, self.max_span_length = span_p, max_span_length
        self.max_sbo_targets = max_sbo_targets

    def __call__(self, input_ids: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        real = real_tokens(input_ids, self.vocab)
        starts = word_starts(input_ids, self.vocab)
        mask, lengths = draw_span_masks(real, starts, budget(real, self.mask_prob, "ceil"),
                                        self.span_p, self.max_span_length, generator)
        row, start, end = span_runs(mask)
        u_span = torch.rand(len(row), generator=generator)
        u = torch.ones(input_ids.shape)
        run_id = (mask & ~torch.cat([torch.zeros_like(mask[:, :1]), mask[:, :-1]], 1)).flatten()
        run_id = run_id.long().cumsum(0) - 1
        flat = mask.flatten()
        u.view(-1)[flat] = u_span[run_id[flat]]
        inputs, labels = replace(input_ids, mask, u, self.vocab, self.mask_replace_prob,
                                 self.random_replace_prob, generator, unigram=True)
        return MaskedBatch(inputs, labels, sbo_targets(real, row, start, end, self.max_sbo_targets),
                           lengths)
