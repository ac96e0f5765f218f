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

import functools
import json
import math
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from bertkit.errors import BertkitError

IGNORE = -100


def word_boundary_rule(tokenizer) -> tuple[str, str]:
    """How ``tokenizer`` marks word boundaries in its pieces, read from the tokenizer itself.

    Returns:
        ``("continuation", prefix)``: pieces starting with ``prefix`` continue a word (WordPiece's
        ``continuing_subword_prefix``, e.g. ``##``, or a BPE model's); ``("start", marker)``:
        pieces starting with ``marker`` begin a word (SentencePiece ``▁``, byte-level BPE ``Ġ``);
        ``("none", "")``: every piece is a word (a word-level model).

    Raises:
        BertkitError: a tokenizer without a ``tokenizers`` backend, or a model type whose word
            boundaries cannot be read.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise BertkitError(f"cannot read the word boundaries of {type(tokenizer).__name__}",
                           expected="a tokenizer with a `tokenizers` backend (fast tokenizer)")
    spec = json.loads(backend.to_str())
    model = spec.get("model") or {}
    prefix = model.get("continuing_subword_prefix")
    if prefix:
        return "continuation", prefix
    parts = list(_components(spec.get("pre_tokenizer"))) + list(_components(spec.get("decoder")))
    metaspace = [c for c in parts if c.get("type") == "Metaspace"]
    if metaspace or model.get("type") == "Unigram":
        return "start", (metaspace[0].get("replacement") if metaspace else None) or "\u2581"
    if any(c.get("type") == "ByteLevel" for c in parts):
        return "start", "\u0120"
    if model.get("type") == "WordLevel":
        return "none", ""
    raise BertkitError(f"cannot tell word boundaries of a {model.get('type')} tokenizer",
                       expected="WordPiece, SentencePiece (Metaspace), byte-level BPE or "
                                "word-level")


def _components(node):
    """The pre-tokenizer / decoder dicts of a ``tokenizer.json`` part, ``Sequence`` unfolded."""
    if isinstance(node, dict):
        yield node
        for key in ("pretokenizers", "decoders"):
            for child in node.get(key) or ():
                yield from _components(child)


@dataclass
class VocabInfo:
    """What masking needs to know about a vocabulary.

    Attributes:
        vocab_size: V, the number of token ids.
        mask_id / pad_id: ids of ``[MASK]`` and ``[PAD]``.
        special_ids: ``[S]`` long, every special token id (never masked, never a replacement).
        continues_word: ``[V]`` bool, True for pieces that continue the previous word
            (WordPiece: pieces with the tokenizer's continuation prefix, ``##`` by default;
            SentencePiece / byte-level BPE: pieces without the word-start marker ``▁`` / ``Ġ``).
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
        """Build from a Hugging Face tokenizer (``[MASK]`` required). Word boundaries come from the
        tokenizer's own rule (:func:`word_boundary_rule`), never from an assumed ``##``.

        Raises:
            BertkitError: the tokenizer has no mask token, or its word-boundary rule is unknown.
        """
        if tokenizer.mask_token_id is None:
            raise BertkitError("the tokenizer has no mask token", expected="a BERT-style vocabulary "
                                                                         "with [MASK]")
        vocab = tokenizer.get_vocab()
        size = max(len(tokenizer), max(vocab.values()) + 1)
        kind, marker = word_boundary_rule(tokenizer)
        cont = torch.zeros(size, dtype=torch.bool)
        for piece, i in vocab.items():
            if kind == "continuation":
                cont[i] = piece.startswith(marker)
            elif kind == "start":
                cont[i] = not piece.startswith(marker)
        special = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        cont[special] = False
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else -1
        uni = None if unigram is None else torch.as_tensor(np.asarray(unigram), dtype=torch.float64)
        return cls(size, int(tokenizer.mask_token_id), int(pad), special, cont, uni)

    def __post_init__(self) -> None:
        is_special = torch.zeros(self.vocab_size, dtype=torch.bool)
        is_special[self.special_ids] = True
        self.is_special = is_special
        self.is_real = ~is_special  # lookup tables for torch.take (several times faster than [])
        self.continues_word = self.continues_word.bool().contiguous()
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
        sbo_boundaries: ``[B, T, 2]`` long, span masking only (else None): at each masked
            position of a span s..e whose boundaries s-1 and e+1 are real tokens, (s-1, e+1);
            -1 elsewhere. The one representation of SpanBERT's SBO targets (Joshi et al., 2020,
            sec. 3.2): indexed by row first, so a process's slice of the rows keeps its own;
            :class:`bertkit.heads.sbo.SpanBoundaryHead` reads it (and caps targets per span).
        span_lengths: ``[K]`` long, drawn lengths in words of the spans applied (span masking
            only; for statistics and tests).
    """

    input_ids: torch.Tensor
    labels: torch.Tensor
    sbo_boundaries: torch.Tensor | None = None
    span_lengths: torch.Tensor | None = None


def real_tokens(input_ids: torch.Tensor, vocab: VocabInfo) -> torch.Tensor:
    """``[B, T]`` bool: True on tokens that may be masked (not special, not padding)."""
    return torch.take(vocab.is_real, input_ids)


def word_starts(input_ids: torch.Tensor, vocab: VocabInfo,
                real: torch.Tensor | None = None) -> torch.Tensor:
    """``[B, T]`` bool: True where a real token begins a word.

    A piece begins a word unless it continues one (:attr:`VocabInfo.continues_word`, from the
    tokenizer's own rule); a continuation right after a special token (e.g. a packed sequence
    that starts mid-word) begins a word too. ``real``: :func:`real_tokens`, if already known.
    """
    if real is None:
        real = real_tokens(input_ids, vocab)
    prev_real = torch.zeros_like(real)
    prev_real[:, 1:] = real[:, :-1]
    return real & ~(torch.take(vocab.continues_word, input_ids) & prev_real)


def word_structure(real: np.ndarray, continues: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Words of each row: a real piece starts a word unless it continues the real piece before it.

    Args:
        real / continues: ``[B, T]`` bool.

    Returns:
        ``word_id [B, T]`` int16 (-1 on non-real tokens) and ``word_len [B, W + 1]`` int64
        (pieces per word; W = the most words of a row; the last column is 0, a sentinel).
    """
    B, T = real.shape
    starts = real.copy()
    starts[:, 1:] &= ~(continues[:, 1:] & real[:, :-1])
    word_id = starts.cumsum(1, dtype=np.int16) - 1  # int16: T < 32768; small ints are faster
    word_id[~real] = -1
    W = int(word_id.max()) + 1 if word_id.size else 0
    flat = (np.arange(B)[:, None] * (W + 1) + np.where(real, word_id, W)).ravel()
    word_len = np.bincount(flat, weights=real.ravel(), minlength=B * (W + 1))
    return word_id, word_len.astype(np.int64).reshape(B, W + 1)


def budget(real: torch.Tensor | np.ndarray, prob: float, rounding: str) -> list[int]:
    """Tokens to mask in each of the B rows: ``round`` (BERT: max(1, round(n p))) or ``ceil``
    (SpanBERT: ceil(n p)), at most the row's ``n`` real tokens (a row with none gets 0).

    Computed on the B row counts in Python: cheaper than several small tensor ops.
    """
    counts = real.sum(1).tolist()
    if rounding == "ceil":
        return [min(n, math.ceil(n * prob - 1e-9)) for n in counts]
    return [min(n, max(1, round(n * prob))) for n in counts]


def mask_capacity(length: int, prob: float) -> int:
    """The most tokens any masking strategy labels in one row of ``length`` tokens with
    budget ``prob``: ``max(1, ceil(prob * length))`` (the budgets of :func:`budget` never
    exceed it). A fixed count per batch shape, so the training step's gather of masked
    positions has a static shape (as ``max_predictions_per_seq`` in BERT's
    ``create_pretraining_data.py``, Devlin et al. 2019, and NVIDIA's ``--dense_seq_output``)."""
    return min(length, max(1, math.ceil(prob * length - 1e-9)))


def static_positions(labels: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The labelled positions of each row at a fixed count ``k``: ``positions [B, k]`` (long,
    ascending within a row; where a row has fewer than ``k`` labels the rest point at unlabelled
    positions) and ``targets [B, k]`` (their labels; ``IGNORE`` at those filler positions).

    Sorts instead of ``nonzero`` or boolean indexing, so it runs on any device without a host
    sync and with shapes that depend only on ``[B, T]`` and ``k``.

    Args:
        labels: ``[B, T]`` long, ``IGNORE`` where nothing is predicted.
        k: positions kept per row, at least the most labels of any row
            (:func:`mask_capacity`): labels beyond ``k`` in a row would be lost, so the
            prefetch side checks it (:func:`check_capacity`).
    """
    picked = (labels != IGNORE).to(torch.int8)
    order = torch.sort(picked, dim=1, descending=True, stable=True).indices[:, :k]
    return order, labels.gather(1, order)


def check_capacity(labels: torch.Tensor, k: int) -> None:
    """Raise ``ValueError`` if a row of ``labels`` ``[B, T]`` (CPU) has more than ``k`` labels:
    :func:`static_positions` would drop them. Run where the batch is built, not in the step."""
    most = int((labels != IGNORE).sum(1).max()) if labels.numel() else 0
    if most > k:
        raise ValueError(f"a row has {most} masked tokens, more than the capacity {k}")


def random_tokens(shape: tuple[int, ...], vocab: VocabInfo, generator: torch.Generator,
                  unigram: bool = False) -> torch.Tensor:
    """Random non-special token ids: uniform over the vocabulary, or from the corpus unigram
    distribution (``unigram=True`` and ``vocab.unigram`` set). The draws come from
    ``generator``; the lookups are NumPy (cheaper than torch indexing on small arrays)."""
    if unigram and vocab.cdf is not None:
        u = torch.rand(shape, generator=generator).numpy()
        ids = np.minimum(np.searchsorted(vocab.cdf.numpy(), u), vocab.vocab_size - 1)
        return torch.from_numpy(ids.astype(np.int64))
    pick = torch.randint(len(vocab.normal_ids), shape, generator=generator).numpy()
    return torch.from_numpy(vocab.normal_ids.numpy()[pick])


def replace(input_ids: torch.Tensor, chosen: torch.Tensor | np.ndarray,
            u: torch.Tensor | np.ndarray, vocab: VocabInfo, mask_replace_prob: float,
            random_replace_prob: float, generator: torch.Generator,
            unigram: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply the 80/10/10 rule to the chosen tokens: ``[MASK]`` if ``u < mask_replace_prob``, a
    random non-special token (see :func:`random_tokens`) if ``u < mask_replace_prob +
    random_replace_prob``, else the token itself.

    Works on the N chosen positions only (about 15% of the batch), in NumPy (cheaper than torch
    on arrays this small); the random tokens come from ``generator``.

    Args:
        input_ids: ``[B, T]`` long, on the CPU.
        chosen: ``[N]`` long, distinct flat indices into ``input_ids.view(-1)`` (any order).
        u: ``[N]`` uniform draws, one per chosen position (per token, or one per span repeated
            over its tokens).

    Returns:
        (inputs, labels), both ``[B, T]`` long; labels are ``-100`` off the chosen positions.
    """
    ids = np.ascontiguousarray(input_ids.numpy())
    chosen, u = np.asarray(chosen), np.asarray(u)
    original = ids.reshape(-1)[chosen]
    labels = np.full(ids.shape, IGNORE, dtype=ids.dtype)
    labels.reshape(-1)[chosen] = original
    new = np.where(u < mask_replace_prob, vocab.mask_id, original)
    if random_replace_prob > 0:
        rand = random_tokens(original.shape, vocab, generator, unigram).numpy()
        new = np.where((u >= mask_replace_prob) & (u < mask_replace_prob + random_replace_prob),
                       rand, new)
    inputs = ids.copy()
    inputs.reshape(-1)[chosen] = new
    return torch.from_numpy(inputs), torch.from_numpy(labels)


@functools.cache
def kernels():
    """The compiled masking kernels (:mod:`bertkit.masking.kernels`, numba), imported on first
    use; None where numba is not installed or ``BERTKIT_MASKING_JIT=0`` is set, and the maskers
    then run their NumPy formulation, which gives the same masks (same draws, same order)."""
    if os.environ.get("BERTKIT_MASKING_JIT", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        from bertkit.masking import kernels as compiled
    except ImportError:
        return None
    return compiled


def as_ids(input_ids: torch.Tensor) -> np.ndarray:
    """``[B, T]`` int64 C-contiguous NumPy view (or copy) of a CPU id tensor, for the kernels.

    Raises:
        BertkitError: not a 2-D integer tensor.
    """
    if input_ids.dim() != 2 or input_ids.dtype.is_floating_point or input_ids.dtype == torch.bool:
        raise BertkitError(f"masking got a {tuple(input_ids.shape)} {input_ids.dtype} tensor",
                           expected="[batch, length] integer token ids")
    return np.ascontiguousarray(input_ids.numpy(), dtype=np.int64)


def check_ids(bad: int, ids: np.ndarray, vocab: VocabInfo) -> None:
    """Raise when the kernels found an id outside the vocabulary (``bad``: its flat index, or -1).

    Raises:
        BertkitError: naming the row, position and id.
    """
    if bad >= 0:
        row, col = divmod(int(bad), ids.shape[1])
        raise BertkitError(f"token id {int(ids[row, col])} at row {row}, position {col} of the "
                           f"batch is outside the vocabulary",
                           expected=f"ids in 0..{vocab.vocab_size - 1}")


_NO_RUN = np.zeros(0, dtype=np.int64)
_NO_INT = np.zeros(0, dtype=np.int64)
_NO_FLOAT = np.zeros(0, dtype=np.float32)


def replace_compiled(ids: np.ndarray, chosen: np.ndarray, u: np.ndarray, vocab: VocabInfo,
                     mask_replace_prob: float, random_replace_prob: float,
                     generator: torch.Generator, unigram: bool = False,
                     run: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`replace` by the compiled kernel, with the same draws from ``generator`` (the random
    tokens of all N chosen positions, as :func:`random_tokens`), so the same result.

    Args:
        ids: ``[B, T]`` int64 C-contiguous (see :func:`as_ids`).
        chosen: ``[N]`` int64 flat indices; u: float32 draws, ``[N]``, or ``[S]`` with ``run``.
        run: ``[N]`` int64, the span of each chosen position (one draw per span), or None.

    Returns:
        (inputs, labels), both ``[B, T]`` int64 tensors.
    """
    kind, pick, u_random, cdf = 0, _NO_INT, _NO_FLOAT, _NO_FLOAT
    if random_replace_prob > 0:
        if unigram and vocab.cdf is not None:
            kind = 2
            u_random = torch.rand(chosen.shape, generator=generator).numpy()
            cdf = vocab.cdf.numpy()
        else:
            kind = 1
            pick = torch.randint(len(vocab.normal_ids), chosen.shape, generator=generator).numpy()
    inputs, labels = kernels().replace(
        ids, chosen, u, _NO_RUN if run is None else run, vocab.mask_id,
        np.float32(mask_replace_prob), np.float32(mask_replace_prob + random_replace_prob), kind,
        pick, vocab.normal_ids.numpy(), u_random, cdf)
    return torch.from_numpy(inputs), torch.from_numpy(labels)


@functools.lru_cache(maxsize=64)
def row_offsets(B: int, T: int) -> torch.Tensor:
    """``[B, 1]`` long, ``b * T``: turns a column index of row b into a flat index (cached)."""
    return torch.arange(B)[:, None] * T


def flat_positions(mask: torch.Tensor) -> torch.Tensor:
    """``[N]`` long: the flat indices (row-major) where the ``[B, T]`` bool ``mask`` is True."""
    return mask.reshape(-1).nonzero().squeeze(1)


class Masker(ABC):
    """A masking strategy. Call it on ``[B, T]`` ids with a seeded generator.

    Args:
        vocab: see :class:`VocabInfo`.
        mask_prob: share of real tokens to predict (0.15).
        mask_replace_prob / random_replace_prob: BERT's 80/10 (the rest keep the token).

    Attribute ``jit``: True (the default where numba is installed) runs the compiled kernels of
    :mod:`bertkit.masking.kernels`, False the NumPy formulation; both draw the same numbers from
    the generator in the same order and give the same masks.

    Raises:
        BertkitError: probabilities out of range.
    """

    name = "base"
    spans = False  # True: masks spans and gives SBO boundaries (SpanBERT); the one place that says so

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
        # the compiled kernels when numba is there (same masks as the NumPy path, faster)
        self.jit = kernels() is not None

    @abstractmethod
    def __call__(self, input_ids: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        """Mask ``input_ids`` (``[B, T]`` long, CPU) and return a :class:`MaskedBatch`."""


class WordMasker(Masker):
    """A masker of whole words (whole-word and span masking): it keeps the vocabulary's
    real-token and word-continuation tables as NumPy arrays for its word structure. Arguments
    and errors as :class:`Masker`'s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._real = self.vocab.is_real.numpy()
        self._continues = self.vocab.continues_word.numpy()

    def _words(self, input_ids: torch.Tensor) -> tuple[np.ndarray, ...]:
        """``ids [B, T]`` (NumPy), ``real [B, T]`` bool and :func:`word_structure`'s
        ``word_id [B, T]`` and ``word_len [B, W + 1]`` of ``input_ids``."""
        ids = input_ids.numpy()
        real = self._real[ids]
        word_id, word_len = word_structure(real, self._continues[ids])
        return ids, real, word_id, word_len
