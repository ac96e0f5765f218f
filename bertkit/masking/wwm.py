"""Whole-word masking, as BERT's ``create_pretraining_data.py`` (``do_whole_word_mask``).

A word is a piece plus its ``##`` continuations. Words are visited in a random order and a word
is taken when all its pieces still fit in the budget ``max(1, round(p * n))`` tokens, else skipped
(later, shorter words may still fit), so the budget, counted in tokens, is never exceeded. The
80/10/10 replacement is then decided per token, as in BERT.

Vectorised: the greedy pass runs in rounds over the whole batch. In each round the words that no
longer fit (longer than the remaining budget) are dropped, the longest prefix of the rest (in the
shuffled order) that fits is taken; the word after it is then too long for what remains and is
dropped in the next round. This is exactly BERT's sequential loop; rounds are few (the remaining
budget strictly shrinks).
"""

from __future__ import annotations

import torch

from bertkit.masking.base import (MaskedBatch, Masker, budget, real_tokens, replace,
                                  word_starts)


def word_table(real: torch.Tensor, starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Word index of each real token and word lengths.

    Returns:
        ``word_id [B, T]`` long (-1 on non-real tokens) and ``lengths [B, T]`` long (pieces of
        word w of row b at ``[b, w]``; 0 beyond the row's last word).
    """
    word_id = starts.long().cumsum(1) - 1
    word_id = torch.where(real & (word_id >= 0), word_id, torch.full_like(word_id, -1))
    lengths = torch.zeros(real.shape[0], real.shape[1] + 1, dtype=torch.long)
    lengths.scatter_add_(1, torch.where(word_id >= 0, word_id, real.shape[1]), real.long())
    return word_id, lengths[:, :-1]


def choose_words(lengths: torch.Tensor, k: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``[B, W]`` bool: words taken by BERT's greedy whole-word pass with budget ``k`` tokens.

    Args:
        lengths: ``[B, W]`` pieces per word (0 = no word).
    """
    B, W = lengths.shape
    order = torch.rand((B, W), generator=generator).argsort(dim=1)
    ordered = lengths.gather(1, order)
    remaining = k.clone()
    undecided = ordered > 0
    taken = torch.zeros_like(undecided)
    while True:
        undecided &= ordered <= remaining[:, None]
        if not undecided.any():
            break
        sizes = torch.where(undecided, ordered, torch.zeros_like(ordered))
        fits = undecided & (sizes.cumsum(1) <= remaining[:, None])
        taken |= fits
        undecided &= ~fits
        remaining = remaining - torch.where(fits, ordered, 0).sum(1)
    out = torch.zeros_like(taken)
    out.scatter_(1, order, taken)
    return out


class WholeWordMasker(Masker):
    """BERT whole-word masking; see the module docstring. Returns no SBO targets."""

    name = "wwm"

    def __call__(self, input_ids: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        real = real_tokens(input_ids, self.vocab)
        word_id, lengths = word_table(real, word_starts(input_ids, self.vocab))
        words = choose_words(lengths, budget(real, self.mask_prob, "round"), generator)
        chosen = words.gather(1, word_id.clamp(min=0)) & (word_id >= 0)
        u = torch.rand(input_ids.shape, generator=generator)
        inputs, labels = replace(input_ids, chosen, u, self.vocab, self.mask_replace_prob,
                                 self.random_replace_prob, generator)
        return MaskedBatch(inputs, labels)
