"""Documents -> independent WordPiece segments and document-level batches.

* Segments (Joshi et al., 2019, §3 "independent"): a document's pieces are cut into segments of
  at most ``max_length - 2`` pieces plus ``[CLS]``/``[SEP]``, at a sentence end when one falls in
  the segment, else at a word boundary; each segment is encoded on its own (no overlap), so
  memory grows linearly with the document. A word never straddles two segments; a word with more
  pieces than a segment holds keeps its first ``max_length - 2`` (counted, ``long_words``).
* A word's vector is the mean of its pieces' vectors: the batch carries ``piece_word`` ``[S, T]``
  (the batch-level index of the word a piece belongs to, -1 for special and pad pieces).
* A batch is whole documents; training may crop a long document to a random run of
  ``max_train_segments`` consecutive segments (the order and the crops depend only on seed and
  epoch, so a resumed run replays them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from bertkit.data.conll2012 import CorefDocument


@dataclass
class EncodedDocument:
    """One document as model input: ``W`` words in ``S`` segments.

    Attributes:
        segments: ``[T_s]`` int64 piece ids per segment ([CLS] ... [SEP]).
        piece_word: ``[T_s]`` int64 per segment: the document word of each piece, -1 for specials.
        sentence: ``[W]`` int64 sentence index of each word.
        segment_words: ``(first, end)`` words of each segment (end exclusive).
        spans: ``[M, 2]`` int64 gold mentions (start, end word, inclusive); clusters ``[M]``.
    """

    segments: list[np.ndarray]
    piece_word: list[np.ndarray]
    sentence: np.ndarray
    segment_words: list[tuple[int, int]]
    spans: np.ndarray
    clusters: np.ndarray

    @property
    def n_words(self) -> int:
        return len(self.sentence)

    def crop(self, first: int, count: int) -> "EncodedDocument":
        """Segments ``first .. first+count-1`` and the gold mentions wholly inside them."""
        lo, hi = self.segment_words[first][0], self.segment_words[first + count - 1][1]
        keep = (self.spans[:, 0] >= lo) & (self.spans[:, 1] < hi) if len(self.spans) else \
            np.zeros(0, bool)
        return EncodedDocument(
            self.segments[first:first + count],
            [np.where(p >= 0, p - lo, -1) for p in self.piece_word[first:first + count]],
            self.sentence[lo:hi], [(a - lo, b - lo) for a, b in
                                   self.segment_words[first:first + count]],
            self.spans[keep] - lo, self.clusters[keep])


def segment_bounds(counts: np.ndarray, sentence: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Cut words with piece ``counts`` ``[W]`` into segments of at most ``budget`` pieces.

    Returns:
        ``(first, end)`` word ranges (end exclusive), covering every word once, each ending at
        the last sentence end inside it when there is one (else as late as the budget allows).

    >>> segment_bounds(np.array([1, 1, 1, 1, 1]), np.array([0, 0, 1, 1, 1]), 4)
    [(0, 2), (2, 5)]
    """
    W = len(counts)
    cum = np.concatenate([[0], np.cumsum(np.minimum(counts, budget))])
    ends_sentence = np.append(sentence[1:] != sentence[:-1], True)  # [W] word ends a sentence
    bounds, start = [], 0
    while start < W:
        end = int(np.searchsorted(cum, cum[start] + budget, side="right")) - 1
        end = min(max(end, start + 1), W)
        if end < W:
            inside = np.nonzero(ends_sentence[start:end])[0]
            if len(inside):
                end = start + int(inside[-1]) + 1
        bounds.append((start, end))
        start = end
    return bounds


def encode_documents(docs: Sequence[CorefDocument], tokenizer, max_length: int
                     ) -> tuple[list[EncodedDocument], dict]:
    """Encode documents (see module docstring); gold clusters are used when present.

    Returns:
        the encoded documents and counts: ``long_words`` (words cut to a segment's budget).
    """
    budget = max_length - 2
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    out, long_words = [], 0
    for doc in docs:
        words = [w if w.strip() else tokenizer.unk_token for w in doc.words]
        enc = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        word_ids = np.asarray([-1 if w is None else w for w in enc.word_ids()], dtype=np.int64)
        lo = np.searchsorted(word_ids, np.arange(len(words)), side="left")  # pieces ordered by word
        hi = np.searchsorted(word_ids, np.arange(len(words)), side="right")
        unk = np.asarray([tokenizer.unk_token_id], dtype=np.int64)
        pieces = [ids[a:b] if b > a else unk for a, b in zip(lo, hi)]  # no pieces: [UNK]
        counts = np.asarray([len(p) for p in pieces])
        long_words += int((counts > budget).sum())
        sentence = np.asarray(doc.sentence_ids(), dtype=np.int64)
        bounds = segment_bounds(counts, sentence, budget)
        segments, piece_word = [], []
        for a, b in bounds:
            pid, pw = [], []
            for w in range(a, b):
                pid.append(pieces[w][:budget])
                pw.append(np.full(len(pid[-1]), w))
            segments.append(np.concatenate([[cls_id], *pid, [sep_id]]).astype(np.int64))
            piece_word.append(np.concatenate([[-1], *pw, [-1]]).astype(np.int64))
        spans = [(s, e, k) for k, cl in enumerate(doc.clusters or []) for s, e in cl]
        arr = np.asarray(spans, dtype=np.int64).reshape(-1, 3)
        out.append(EncodedDocument(segments, piece_word, sentence, bounds, arr[:, :2].copy(),
                                   arr[:, 2].copy()))
    return out, {"long_words": long_words}


def collate(docs: Sequence[EncodedDocument], pad_id: int) -> dict[str, torch.Tensor]:
    """Documents -> one batch (all segments stacked; word indices offset per document).

    Returns:
        ``documents`` ``[B]``; ``input_ids``, ``attention_mask``, ``piece_word`` ``[S, T]``;
        ``n_words`` ``[B]``; ``sentence`` ``[W_all]`` (offset so that documents never share one);
        ``spans`` ``[M, 2]`` (batch word indices), ``clusters`` ``[M]`` (offset per document),
        ``span_doc`` ``[M]``.
    """
    segs = [s for d in docs for s in d.segments]
    T = max(len(s) for s in segs)
    ids = np.full((len(segs), T), pad_id, dtype=np.int64)
    mask = np.zeros((len(segs), T), dtype=np.int64)
    pw = np.full((len(segs), T), -1, dtype=np.int64)
    row, w_off, s_off, c_off = 0, 0, 0, 0
    sentence, spans, clusters, span_doc = [], [], [], []
    for b, d in enumerate(docs):
        for s, p in zip(d.segments, d.piece_word):
            ids[row, :len(s)], mask[row, :len(s)] = s, 1
            pw[row, :len(p)] = np.where(p >= 0, p + w_off, -1)
            row += 1
        sentence.append(d.sentence + s_off)
        spans.append(d.spans + w_off)
        clusters.append(d.clusters + c_off)
        span_doc.append(np.full(len(d.spans), b))
        w_off += d.n_words
        s_off += int(d.sentence.max()) + 1 if d.n_words else 0
        c_off += int(d.clusters.max()) + 1 if len(d.clusters) else 0
    t = torch.from_numpy
    return {"documents": torch.arange(len(docs)), "input_ids": t(ids), "attention_mask": t(mask),
            "piece_word": t(pw), "n_words": torch.tensor([d.n_words for d in docs]),
            "sentence": t(np.concatenate(sentence)),
            "spans": t(np.concatenate(spans).reshape(-1, 2)),
            "clusters": t(np.concatenate(clusters)), "span_doc": t(np.concatenate(span_doc))}


class DocumentBatches:
    """Training batches of whole documents (a :class:`~bertkit.training.loop.BatchSource`):
    shuffled per epoch with ``seed + epoch``; a document of more than ``max_segments`` segments
    is cropped to a random run of them (same generator)."""

    def __init__(self, docs: Sequence[EncodedDocument], batch_size: int, seed: int, pad_id: int,
                 max_segments: int) -> None:
        self.docs, self.batch_size, self.seed = list(docs), batch_size, seed
        self.pad_id, self.max_segments = pad_id, max_segments

    def num_batches(self, epoch: int) -> int:
        return -(-len(self.docs) // self.batch_size)

    def _plan(self, epoch: int) -> tuple[np.ndarray, list[int]]:
        rng = np.random.default_rng(self.seed + epoch)
        order = rng.permutation(len(self.docs))
        firsts = [int(rng.integers(0, len(d.segments) - self.max_segments + 1))
                  if len(d.segments) > self.max_segments else 0 for d in self.docs]
        return order, firsts

    def iter_batches(self, epoch: int, start: int = 0) -> Iterator[dict[str, torch.Tensor]]:
        order, firsts = self._plan(epoch)
        for k in range(start, self.num_batches(epoch)):
            idx = order[k * self.batch_size:(k + 1) * self.batch_size]
            docs = [self.docs[i] if len(self.docs[i].segments) <= self.max_segments else
                    self.docs[i].crop(firsts[i], self.max_segments) for i in idx]
            yield collate(docs, self.pad_id)
