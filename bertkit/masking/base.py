"""The masking interface shared by every strategy (token, whole-word, span).

A strategy takes a batch of token ids ``[B, T]`` and returns the model inputs, the MLM labels
(``-100`` where nothing is predicted) and, for span masking, the span-boundary targets the SBO
head needs. Special tokens and padding are never chosen, never labelled and never used as a
random replacement. Every random draw goes through the ``torch.Generator`` the caller passes, so
masking is dynamic (a new generator seed per batch and epoch gives new masks) and reproducible.

References:
    Devlin et al. (2019), BERT, sec. 3.1 and appendix A.1 (15% budget, 80/10/10 replacement).
    Joshi et al. (2020), SpanBERT, sec. 3.1-3.2 and the reference ``masking.py``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import torch

from bertkit.errors import BertkitError

IGNORE = -100


@dataclass
class VocabInfo:
    """What masking needs to know about a vocabulary.

    Attributes:
        vocab_size: V, the number of token ids.
        mask_id / pad_id: ids of ``[MASK]`` and ``[PAD]``.
        special_ids: ``[S]`` long, every special token id (never masked, never a replacement).
        continues_word: ``[V]`` bool, True for pieces that continue the previous word
            (WordPiece ``##`` pieces; SentencePiece pieces without a leading ``▁``).
        unigram: ``[V]`` float probabilities of the corpus's token unigram distribution (0 on
            special tokens), used for SpanBERT's random replacements; None: uniform.
    """

    vocab_size: int
    mask_id: int
    pad_id: int
    special_ids: torch.Tensor
    continues_word: torch.Tensor
    unigram: torch.Tensor | None = None

    @classmethod
    def from_tokenizer(cls, tokenizer, unigram: np.ndarray | torch.Tensor | None = None) -> "VocabInfo":
        """Build from a Hugging Face tokenizer (``[MASK]`` required).

        Raises:
            BertkitError: the tokenizer has no mask token.
        """
        if tokenizer.mask_token_id is None:
            raise BertkitError("the tokenizer has no mask token", expected="a BERT-style vocabulary "
                                                                         "with [MASK]")
        vocab = tokenizer.get_vocab()
        size = max(len(tokenizer), max(vocab.values()) + 1)
        cont = torch.zeros(size, dtype=torch.bool)
        metaspace = any(t.startswith("\u2581") for t in list(vocab)[:2000])
        for piece, i in vocab.items():
            cont[i] = (not piece.startswith("\u2581")) if metaspace else piece.startswith("##")
        special = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        cont[special] = False
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else -1
        uni = None if unigram is None else torch.as_tensor(np.asarray(unigram), dtype=torch.float64)
        return cls(size, int(tokenizer.mask_token_id), int(pad), special, cont, uni)

    def __post_init__(self) -> None:
        is_special = torch.zeros(self.vocab_size, dtype=torch.bool)
        is_special[self.special_ids] = True
        self.is_special = is_special
        self.normal_ids = torch.nonzero(~is_special).squeeze(1)
        self.cdf = None
        if self.unigram is not None:
            p = self.unigram.double().clone()
            if p.shape[0] < self.vocab_size:
                p = torch.cat([p, p.new_zeros(self.vocab_size - p.shape[0])])
            p[is_special] = 0
            if p.sum() <= 0:
                raise BertkitError("the unigram distribution has no mass on non-special tokens")
            self.cdf = (p.cumsum(0) / p.sum()).float()
            self.cdf[-1] = 1.0


@dataclass
class MaskedBatch:
    """A masked batch.

    Attributes:
        input_ids: ``[B, T]`` long, the corrupted inputs.
        labels: ``[B, T]`` long, the original id where a token is predicted, else ``-100``.
        sbo_targets: ``[M, 5]`` long rows (batch row, target position, left boundary s-1,
            right boundary e+1, relative position in the span from 0), or None (no spans).
        span_lengths: ``[K]`` long, drawn lengths in words of the spans applied (span masking
            only; for statistics and tests).
    """

    input_ids: torch.Tensor
    labels: torch.Tensor
    sbo_targets: torch.Tensor | None = None
    span_lengths: torch.Tensor | None = None


def real_tokens(input_ids: torch.Tensor, vocab: VocabInfo) -> torch.Tensor:
    """``[B, T]`` bool: True on tokens that may be masked (not special, not padding)."""
    return ~vocab.is_special[input_ids]


def word_starts(input_ids: torch.Tensor, vocab: VocabInfo) -> torch.Tensor:
    """``[B, T]`` bool: True where a real token begins a word.

    A piece begins a word unless it continues one (``##``); a continuation right after a special
    token (e.g. a packed sequence that starts mid-word) begins a word too.
    """
    real = real_tokens(input_ids, vocab)
    prev_real = torch.zeros_like(real)
    prev_real[:, 1:] = real[:, :-1]
    return real & (~vocab.continues_word[input_ids] | ~prev_real)


def budget(real: torch.Tensor, prob: float, rounding: str) -> torch.Tensor:
    """``[B]`` long: tokens to mask per row: ``round`` (BERT: max(1, round(n p))) or ``ceil`` (SpanBERT)."""
    n = real.sum(1)
    if rounding == "ceil":
        k = torch.ceil(n.double() * prob - 1e-9).long()
    else:
        k = torch.round(n.double() * prob).long().clamp(min=1)
    return torch.minimum(k, n)


def random_tokens(shape: tuple[int, ...], vocab: VocabInfo, generator: torch.Generator,
                  unigram: bool = False) -> torch.Tensor:
    """Random non-special token ids: uniform over the vocabulary, or from the corpus unigram
    distribution (``unigram=True`` and ``vocab.unigram`` set)."""
    if unigram and vocab.cdf is not None:
        u = torch.rand(shape, generator=generator)
        return torch.searchsorted(vocab.cdf, u.flatten()).clamp(max=vocab.vocab_size - 1).view(shape)
    pick = torch.randint(len(vocab.normal_ids), shape, generator=generator)
    return vocab.normal_ids[pick]


def replace(input_ids: torch.Tensor, chosen: torch.Tensor, u: torch.Tensor, vocab: VocabInfo,
            mask_replace_prob: float, random_replace_prob: float, generator: torch.Generator,
            unigram: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply the 80/10/10 rule: where ``chosen``, ``[MASK]`` if ``u < mask_replace_prob``, a random
    non-special token (see :func:`random_tokens`) if ``u < mask_replace_prob +
    random_replace_prob``, else the token itself.

    Args:
        u: ``[B, T]`` uniform draws (per token, or one per span broadcast to its tokens).

    Returns:
        (inputs, labels), both ``[B, T]`` long.
    """
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    to_mask = chosen & (u < mask_replace_prob)
    to_random = chosen & ~to_mask & (u < mask_replace_prob + random_replace_prob)
    out = torch.where(to_mask, torch.full_like(input_ids, vocab.mask_id), input_ids)
    n = int(to_random.sum())
    if n:
        out[to_random] = random_tokens((n,), vocab, generator, unigram)
    return out, labels


class Masker(ABC):
    """A masking strategy. Call it on ``[B, T]`` ids with a seeded generator.

    Args:
        vocab: see :class:`VocabInfo`.
        mask_prob: share of real tokens to predict (0.15).
        mask_replace_prob / random_replace_prob: BERT's 80/10 (the rest keep the token).

    Raises:
        BertkitError: probabilities out of range.
    """

    name = "base"

    def __init__(self, vocab: VocabInfo, mask_prob: float = 0.15, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1) -> None:
        if not 0 < mask_prob < 1:
            raise BertkitError(f"--mask-prob is {mask_prob}", expected="a number in (0, 1)")
        if mask_replace_prob < 0 or random_replace_prob < 0 or mask_replace_prob + random_replace_prob > 1:
            raise BertkitError(f"replacement probabilities {mask_replace_prob}/{random_replace_prob}",
                               expected="two numbers >= 0 that sum to at most 1")
        self.vocab = vocab
        self.mask_prob = mask_prob
        self.mask_replace_prob = mask_replace_prob
        self.random_replace_prob = random_replace_prob

    @abstractmethod
    def __call__(self, input_ids: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        """Mask ``input_ids`` (``[B, T]`` long, CPU) and return a :class:`MaskedBatch`."""
