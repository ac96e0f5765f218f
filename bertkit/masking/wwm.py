"""Whole-word masking, as BERT's ``create_pretraining_data.py`` (``do_whole_word_mask``).

A word is a piece plus its continuation pieces (as the tokenizer marks them, see
:func:`bertkit.masking.base.word_boundary_rule`). Words are visited in a random order and a word
is taken when all its pieces still fit in the budget ``max(1, round(p * n))`` tokens, else skipped
(later, shorter words may still fit), so the budget, counted in tokens, is never exceeded. The
80/10/10 replacement is then decided per token, as in BERT.

Vectorised: the random order is the order of distinct random word keys; only its first
``P = max(k) + 8`` words are sorted (one partial ``topk``), since the greedy pass rarely goes
further (a row that does is redone on its full order, so the result is the same as with a full
sort). The greedy pass runs in rounds over the whole batch: in each round the words that no longer
fit (longer than the remaining budget) are dropped and the longest prefix of the rest (in the
shuffled order) that fits is taken; the word after it is then too long for what remains and is
dropped in the next round. This is exactly BERT's sequential loop; rounds are few (the remaining
budget strictly shrinks).
"""

from __future__ import annotations

import numpy as np
import torch

from bertkit.masking.base import (MaskedBatch, Masker, budget, flat_positions, real_tokens, replace,
                                  word_starts)

EXTRA_WORDS = 8  # words sorted beyond the budget; rows needing more are redone in full


def word_table(real: torch.Tensor, starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Word index of each real token and word lengths.

    Returns:
        ``word_id [B, T]`` long (-1 on non-real tokens) and ``lengths [B, W]`` long (pieces of
        word w of row b at ``[b, w]``; 0 beyond the row's last word; W = the most words of a row).
    """
    word_id = starts.long().cumsum(1) - 1
    word_id = word_id.masked_fill_(~real | (word_id < 0), -1)
    W = max(int(word_id.max()) + 1, 1) if word_id.numel() else 1
    lengths = torch.zeros(real.shape[0], W + 1, dtype=torch.long)
    lengths.scatter_add_(1, word_id.masked_fill(word_id < 0, W), real.long())
    return word_id, lengths[:, :-1]


def greedy(ordered: np.ndarray, remaining: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BERT's greedy pass over words in a given order, in rounds (see the module docstring).

    NumPy: on these small arrays its per-operation cost is a fraction of torch's.

    Args:
        ordered: ``[B, P]`` int64 word lengths in visiting order (0 = no word).
        remaining: ``[B]`` int64, the budgets in tokens.

    Returns:
        ``taken [B, P]`` bool and the budget left ``[B]``.
    """
    avail = ordered.copy()  # lengths of the words not yet decided, 0 once decided
    remaining = remaining.copy()
    taken = np.zeros(ordered.shape, dtype=bool)
    while True:
        avail[avail > remaining[:, None]] = 0  # too long for what is left: skipped for good
        if not avail.any():
            return taken, remaining
        total = avail.cumsum(1)
        fits = (total <= remaining[:, None]) & (avail > 0)
        taken |= fits
        remaining -= np.where(fits, avail, 0).sum(1)
        avail[fits] = 0


def choose_words(lengths: torch.Tensor, k: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """``[B, W]`` bool: words taken by BERT's greedy whole-word pass with budget ``k`` tokens,
    visiting words by increasing ``keys``.

    Args:
        lengths: ``[B, W]`` pieces per word (0 = no word).
        k: ``[B]`` long budgets in tokens.
        keys: ``[B, W]`` float, distinct within a row: the random visiting order.
    """
    B, W = lengths.shape
    P = min(W, int(k.max()) + EXTRA_WORDS) if B else 0
    out = torch.zeros(B, W, dtype=torch.bool)
    if P == 0:
        return out
    keys = keys.masked_fill(lengths == 0, float("inf"))
    order = keys.topk(P, dim=1, largest=False, sorted=True).indices  # [B, P]
    taken, left = greedy(lengths.gather(1, order).numpy(), k.numpy())
    out.scatter_(1, order, torch.from_numpy(taken))
    if P < W:  # rows whose pass may go beyond the first P words: redo them on the full order
        redo = (left > 0) & ((lengths > 0).sum(1).numpy() > P)
        if redo.any():
            rows = torch.from_numpy(redo.nonzero()[0])
            order = keys[rows].argsort(dim=1)
            taken, _ = greedy(lengths[rows].gather(1, order).numpy(), k[rows].numpy())
            out[rows] = torch.zeros(order.shape, dtype=torch.bool).scatter_(
                1, order, torch.from_numpy(taken))
    return out


class WholeWordMasker(Masker):
    """BERT whole-word masking; see the module docstring. Returns no SBO boundaries."""

    name = "wwm"

    def __call__(self, input_ids: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        real = real_tokens(input_ids, self.vocab)
        word_id, lengths = word_table(real, word_starts(input_ids, self.vocab, real))
        keys = torch.rand(lengths.shape, generator=generator)
        words = choose_words(lengths, torch.tensor(budget(real, self.mask_prob, "round")), keys)
        chosen = flat_positions(words.gather(1, word_id.clamp(min=0)) & real)
        u = torch.rand(chosen.shape, generator=generator)
        inputs, labels = replace(input_ids, chosen, u, self.vocab, self.mask_replace_prob,
                                 self.random_replace_prob, generator)
        return MaskedBatch(inputs, labels)
