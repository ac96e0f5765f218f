"""Masking strategies for MLM pretraining: BERT token and whole-word masking, SpanBERT spans.

:func:`build_masker` turns a ``--masking`` name into a strategy; every strategy follows the
interface of :class:`bertkit.masking.base.Masker`.
"""

from __future__ import annotations

from bertkit.errors import BertkitError
from bertkit.masking.base import (IGNORE, MaskedBatch, Masker, VocabInfo, check_capacity,
                                  mask_capacity, real_tokens, static_positions,
                                  word_boundary_rule, word_starts)
from bertkit.masking.span import SpanMasker, span_length_distribution
from bertkit.masking.token import TokenMasker
from bertkit.masking.wwm import WholeWordMasker

STRATEGIES = {cls.name: cls for cls in (TokenMasker, WholeWordMasker, SpanMasker)}
CHOICES = ", ".join(STRATEGIES)


def gives_spans(name: str) -> bool:
    """Whether the strategy called ``name`` masks spans and gives SBO boundaries (``span``).

    Raises:
        BertkitError: an unknown name.
    """
    if name not in STRATEGIES:
        raise BertkitError(f"unknown masking '{name}'", expected=CHOICES)
    return STRATEGIES[name].spans


def build_masker(name: str, vocab: VocabInfo, mask_prob: float = 0.15,
                 mask_replace_prob: float = 0.8, random_replace_prob: float = 0.1,
                 span_p: float = 0.2, max_span_length: int = 10) -> Masker:
    """The strategy called ``name`` (``token``, ``wwm`` or ``span``).

    Raises:
        BertkitError: an unknown name or settings out of range.
    """
    kwargs = dict(mask_prob=mask_prob, mask_replace_prob=mask_replace_prob,
                  random_replace_prob=random_replace_prob)
    if gives_spans(name):
        kwargs.update(span_p=span_p, max_span_length=max_span_length)
    return STRATEGIES[name](vocab, **kwargs)


__all__ = ["IGNORE", "MaskedBatch", "Masker", "check_capacity", "mask_capacity",
           "static_positions", "VocabInfo", "TokenMasker", "WholeWordMasker",
           "SpanMasker", "build_masker", "real_tokens", "word_starts", "span_length_distribution",
           "STRATEGIES", "CHOICES", "gives_spans", "word_boundary_rule"]
