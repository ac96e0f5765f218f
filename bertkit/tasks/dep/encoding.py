"""Sentences -> WordPiece windows and sentence-level batches for the biaffine parser.

* Windows: a sentence whose pieces exceed the encoder window is split on word boundaries into
  windows overlapping by about half a window (:func:`bertkit.inputs.windowing.window_bounds`);
  each word takes its vector from the window where it sits farthest from an edge. The vectors of
  all windows are gathered back into one sentence-level sequence ``[root, w1..wn]`` before arc
  scoring, so every word is scored against every other word of the sentence and always gets a
  head, whatever the sentence length. The root vector is the first window's ``[CLS]``.
* Word vectors: the first subword (default) or the mean of the word's subwords; in both cases the
  batch carries ``piece_slot`` ``[W, T]``: for each piece, the flat index ``b * (N+1) + word`` of
  the sentence-level slot it feeds, or -1; the model sums (and averages) with one ``index_add_``.
* A word the tokenizer reduces to no pieces is fed as ``[UNK]``; a word with more pieces than a
  window keeps its first ``max_length - 2`` pieces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from bertkit.data.conllu import DepSentence
from bertkit.inputs.batching import GroupedBatches
from bertkit.inputs.windowing import EncodeReport, owners, window_bounds


@dataclass
class EncodedSentence:
    """One sentence as model input. ``n`` words; per window ``T_k`` pieces incl. [CLS]/[SEP].

    Attributes:
        windows: ``[T_k]`` int64 piece ids per window.
        piece_word: ``[T_k]`` int64 per window: the (1-based) word owned by this window that the
            piece belongs to, 0 for the root ([CLS] of the first window), -1 otherwise.
        first: ``[T_k]`` bool per window: the piece is its word's first piece.
        heads: ``[n]`` int64 gold heads (zeros when unlabelled); rels: ``[n]`` int64 label ids.
    """

    windows: list[np.ndarray]
    piece_word: list[np.ndarray]
    first: list[np.ndarray]
    heads: np.ndarray
    rels: np.ndarray

    @property
    def n_pieces(self) -> int:
        return sum(len(w) for w in self.windows)


def encode(sentences: Sequence[DepSentence], tokenizer, rel2id: dict[str, int],
           max_length: int) -> tuple[list[EncodedSentence], EncodeReport]:
    """Encode sentences (see module docstring). Relations missing from ``rel2id`` map to id 0
    (they can only occur outside training and are scored by string).

    Returns:
        one :class:`EncodedSentence` per input sentence, and an :class:`EncodeReport`.
    """
    budget = max_length - 2
    words = [[w if w else tokenizer.unk_token for w in s.words] for s in sentences]
    enc = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    out, empty, long_words, windowed = [], [], [], 0
    for i, s in enumerate(sentences):
        n = len(s.words)
        ids = np.asarray(enc["input_ids"][i], dtype=np.int64)
        wids = np.asarray([-1 if w is None else w for w in enc.word_ids(i)], dtype=np.int64)
        counts = np.bincount(wids[wids >= 0], minlength=n)
        if (counts == 0).any():
            zero = np.flatnonzero(counts == 0)
            empty.extend((i, int(j)) for j in zero)
            fixed = list(words[i])
            for j in zero:
                fixed[j] = tokenizer.unk_token
            e2 = tokenizer([fixed], is_split_into_words=True, add_special_tokens=False)
            ids = np.asarray(e2["input_ids"][0], dtype=np.int64)
            wids = np.asarray(e2.word_ids(0), dtype=np.int64)
            counts = np.bincount(wids, minlength=n)
        cum = np.concatenate([[0], np.cumsum(counts)])
        rank = np.arange(len(wids)) - cum[wids]
        if (counts > budget).any():
            long_words.extend((i, int(j)) for j in np.flatnonzero(counts > budget))
            keep = rank < budget
            ids, wids, rank = ids[keep], wids[keep], rank[keep]
            counts = np.minimum(counts, budget)
            cum = np.concatenate([[0], np.cumsum(counts)])
        bounds = window_bounds(counts, budget)
        windowed += len(bounds) > 1
        own = owners(bounds, n)
        wins, pw, first = [], [], []
        for k, (ws, we) in enumerate(bounds):
            local = wids[cum[ws]:cum[we]]
            piece_word = np.where(own[local] == k, local + 1, -1)
            wins.append(np.concatenate([[cls_id], ids[cum[ws]:cum[we]], [sep_id]]))
            pw.append(np.concatenate([[0 if k == 0 else -1], piece_word, [-1]]))
            first.append(np.concatenate([[True], rank[cum[ws]:cum[we]] == 0, [False]]))
        heads = s.heads if s.heads is not None else np.zeros(n, dtype=np.int64)
        rels = np.asarray([rel2id.get(r, 0) for r in s.rels], dtype=np.int64) \
            if s.rels is not None else np.zeros(n, dtype=np.int64)
        out.append(EncodedSentence(wins, pw, first, np.asarray(heads, dtype=np.int64), rels))
    return out, EncodeReport(empty, long_words, windowed)


def collate(items: Sequence[EncodedSentence], pad_id: int, mean: bool = False
            ) -> dict[str, torch.Tensor]:
    """Pad a batch of ``B`` sentences (``N`` = most words, ``W`` windows, ``T`` = longest window).

    Returns:
        ``mask`` ``[B, N+1]`` (root and words), ``word_mask`` ``[B, N+1]`` (words only),
        ``input_ids``/``attention_mask``/``piece_slot`` ``[W, T]``, ``heads``/``rels``
        ``[B, N+1]`` (0 at the root and padding).
    """
    B = len(items)
    N1 = max(len(it.heads) for it in items) + 1
    wins = [(b, k) for b, it in enumerate(items) for k in range(len(it.windows))]
    T = max(len(items[b].windows[k]) for b, k in wins)
    input_ids = np.full((len(wins), T), pad_id, dtype=np.int64)
    att = np.zeros((len(wins), T), dtype=np.int64)
    slot = np.full((len(wins), T), -1, dtype=np.int64)
    for r, (b, k) in enumerate(wins):
        it = items[b]
        L = len(it.windows[k])
        input_ids[r, :L], att[r, :L] = it.windows[k], 1
        pw = it.piece_word[k]
        use = pw >= 0 if mean else (pw >= 0) & it.first[k]
        slot[r, :L] = np.where(use, b * N1 + pw, -1)
    lengths = np.asarray([len(it.heads) for it in items])
    pos = np.arange(N1)[None, :]
    word_mask = (pos >= 1) & (pos <= lengths[:, None])
    heads = np.zeros((B, N1), dtype=np.int64)
    rels = np.zeros((B, N1), dtype=np.int64)
    for b, it in enumerate(items):
        heads[b, 1:len(it.heads) + 1], rels[b, 1:len(it.rels) + 1] = it.heads, it.rels
    return {"mask": torch.from_numpy(pos <= lengths[:, None]),
            "word_mask": torch.from_numpy(word_mask),
            "input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(att),
            "piece_slot": torch.from_numpy(slot),
            "heads": torch.from_numpy(heads), "rels": torch.from_numpy(rels)}


def SentenceBatches(items: Sequence[EncodedSentence], batch_size: int, seed: int, pad_id: int,
                    mean: bool = False) -> GroupedBatches:
    """The training :class:`~bertkit.training.loop.BatchSource`: length-grouped sentence batches
    (order a function of ``seed + epoch`` only, so resume replays it exactly)."""
    return GroupedBatches(items, [it.n_pieces for it in items], batch_size, seed,
                          lambda xs: collate(xs, pad_id, mean))
