"""Words -> WordPiece windows with aligned labels, and the tagger's training batches.

* Alignment (as Hugging Face's ``run_ner.py``): the first piece of each word carries its label, the
  other pieces ``-100``; with ``label_all_subwords`` they carry it too, ``B-X`` turned into ``I-X``.
* Windowing (:mod:`bertkit.inputs.windowing`, shared with the parser): a sentence longer than the
  model's window is split, on word boundaries, into windows overlapping by about half a window;
  each word is *owned* by the window where it sits farthest from an edge, and is trained and
  predicted there only. Every word gets exactly one prediction.
* A word that the tokenizer reduces to no pieces (soft hyphen, zero-width space, control
  character) is fed as ``[UNK]`` so that it still gets a prediction; a warning says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from bertkit.inputs.batching import length_grouped_batches
from bertkit.data.conll import Sentence
from bertkit.inputs.packing import plan_batch, round_up
from bertkit.inputs.windowing import EncodeReport, owners, window_bounds

IGNORE = -100


@dataclass
class Window:
    """One model input. ``T`` = pieces incl. ``[CLS]``/``[SEP]``, ``K`` = words owned here.

    Attributes:
        sentence: index of the sentence in the encoded list.
        input_ids: ``[T]`` int64 piece ids.
        labels: ``[T]`` int64 token labels, ``-100`` where not trained.
        word_pos: ``[K]`` int64, position of each owned word's first piece.
        word_index: ``[K]`` int64, the owned words' indices in the sentence (contiguous, ascending).
        word_labels: ``[K]`` int64 gold label ids (0 when unlabelled).
    """

    sentence: int
    input_ids: np.ndarray
    labels: np.ndarray
    word_pos: np.ndarray
    word_index: np.ndarray
    word_labels: np.ndarray


def _empty_words(sentences: Sequence[Sentence], enc, unk: str
                 ) -> tuple[list[tuple[int, int]], dict[int, list[str]]]:
    """Words the tokenizer turns into no piece (control or zero-width characters): their
    ``(sentence, word)`` places, and per such sentence its words with each empty one read as
    ``unk`` (so every word keeps a first piece to label)."""
    empty: list[tuple[int, int]] = []
    fixed = {}
    for i, s in enumerate(sentences):
        counts = np.bincount(np.asarray(enc.word_ids(i), dtype=np.int64), minlength=len(s.tokens)) \
            if len(enc["input_ids"][i]) else np.zeros(len(s.tokens), dtype=np.int64)
        if (counts == 0).any():
            zero = np.flatnonzero(counts == 0)
            empty.extend((i, int(j)) for j in zero)
            repl = list(s.tokens)
            for j in zero:
                repl[j] = unk
            fixed[i] = repl
    return empty, fixed


def _continuation_ids(label2id: dict[str, int]) -> np.ndarray:
    """``[L]`` the label id a continuation piece gets: ``B-X`` -> ``I-X``, others their own."""
    i_of = np.arange(len(label2id))  # B-X -> I-X id map for continuation pieces
    for lab, idx in label2id.items():
        if lab.startswith("B-") and f"I-{lab[2:]}" in label2id:
            i_of[idx] = label2id[f"I-{lab[2:]}"]
    return i_of


def _word_label_ids(sentences: Sequence[Sentence], label2id: dict[str, int]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Label ids of all words at once (``O`` for a label missing from ``label2id``) and the
    sentences' offsets into them: ``([total words], [N + 1])``."""
    o_id = label2id.get("O", 0)
    # unique tag strings -> ids, then a gather (no per-word loop)
    offsets = np.concatenate([[0], np.cumsum([len(s.tags) for s in sentences])])
    flat = np.concatenate([np.asarray(s.tags, dtype=object) for s in sentences]) \
        if offsets[-1] else np.zeros(0, dtype=object)
    names, inverse = np.unique(flat.astype(str), return_inverse=True)
    return np.asarray([label2id.get(n, o_id) for n in names], dtype=np.int64)[inverse], offsets


def encode(sentences: Sequence[Sentence], tokenizer, label2id: dict[str, int], max_length: int,
           label_all_subwords: bool = False) -> tuple[list[Window], EncodeReport]:
    """Encode sentences into model windows (see module docstring).

    Args:
        sentences: words (and IOB2 tags, or none for unlabelled text).
        tokenizer: a fast WordPiece tokenizer (``word_ids()`` support).
        label2id: label -> id; a gold label missing from it (seen only in dev/test) is encoded as
            ``O`` for the loss while scoring keeps the gold string.
        max_length: pieces per window including ``[CLS]`` and ``[SEP]``.
        label_all_subwords: train continuation pieces too (``B-X`` -> ``I-X``).

    Returns:
        the windows, in sentence order, and a report of empty and over-long words.
    """
    budget = max_length - 2
    words = [list(s.tokens) for s in sentences]
    enc = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
    long_words: list[tuple[int, int]] = []
    empty, fixed = _empty_words(sentences, enc, tokenizer.unk_token)
    if fixed:
        keys = {k: j for j, k in enumerate(fixed)}
        enc2 = tokenizer(list(fixed.values()), is_split_into_words=True, add_special_tokens=False)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    i_of = _continuation_ids(label2id)
    all_labels, offsets = _word_label_ids(sentences, label2id)
    windows: list[Window] = []
    windowed = 0
    for i, s in enumerate(sentences):
        if i in fixed:
            j = keys[i]
            ids, wids = enc2["input_ids"][j], enc2.word_ids(j)
        else:
            ids, wids = enc["input_ids"][i], enc.word_ids(i)
        ids = np.asarray(ids, dtype=np.int64)
        wids = np.asarray(wids, dtype=np.int64)
        W = len(s.tokens)
        counts = np.bincount(wids, minlength=W)
        if (counts > budget).any():
            # keep the first `budget` pieces of an over-long word (its first piece is what counts)
            over = np.flatnonzero(counts > budget)
            long_words.extend((i, int(j)) for j in over)
            rank = np.arange(len(wids)) - np.concatenate([[0], np.cumsum(counts)])[wids]
            keep = rank < budget
            ids, wids = ids[keep], wids[keep]
            counts = np.minimum(counts, budget)
        word_labels = all_labels[offsets[i]:offsets[i + 1]] if s.tags else np.zeros(W, dtype=np.int64)
        cum = np.concatenate([[0], np.cumsum(counts)])
        bounds = window_bounds(counts, budget)
        windowed += len(bounds) > 1
        own = owners(bounds, W)
        for k, (ws, we) in enumerate(bounds):
            owned = np.flatnonzero(own == k)
            piece_ids = ids[cum[ws]:cum[we]]
            input_ids = np.concatenate([[cls_id], piece_ids, [sep_id]])
            word_pos = 1 + cum[owned] - cum[ws]
            labels = np.full(len(input_ids), IGNORE, dtype=np.int64)
            if s.tags:
                if label_all_subwords:
                    local = wids[cum[ws]:cum[we]]
                    is_owned = own[local] == k
                    cont = labels[1:-1]
                    cont[is_owned] = i_of[word_labels[local[is_owned]]]
                labels[word_pos] = word_labels[owned]
            windows.append(Window(i, input_ids, labels, word_pos.astype(np.int64),
                                  owned.astype(np.int64), word_labels[owned]))
    return windows, EncodeReport(empty, long_words, windowed)


def collate(windows: Sequence[Window], pad_id: int, multiple: int = 1) -> dict[str, torch.Tensor]:
    """Pad windows to the batch's longest, rounded up to a multiple of ``multiple`` (a shape
    bucket; 1: no further): ``[B, T]`` and word-level ``[B, K]`` tensors.

    Returns:
        ``input_ids``, ``attention_mask``, ``labels`` (``-100`` padded) ``[B, T]``; ``word_pos``,
        ``word_mask``, ``word_labels`` ``[B, K]`` (K = most owned words in the batch, rounded
        up likewise).
    """
    B = len(windows)
    T = round_up(max(len(w.input_ids) for w in windows), multiple)
    K = round_up(max(max(len(w.word_pos) for w in windows), 1), multiple)
    input_ids = np.full((B, T), pad_id, dtype=np.int64)
    labels = np.full((B, T), IGNORE, dtype=np.int64)
    mask = np.zeros((B, T), dtype=np.int64)
    word_pos = np.zeros((B, K), dtype=np.int64)
    word_mask = np.zeros((B, K), dtype=bool)
    word_labels = np.zeros((B, K), dtype=np.int64)
    for b, w in enumerate(windows):
        n, k = len(w.input_ids), len(w.word_pos)
        input_ids[b, :n], labels[b, :n], mask[b, :n] = w.input_ids, w.labels, 1
        word_pos[b, :k], word_mask[b, :k], word_labels[b, :k] = w.word_pos, True, w.word_labels
    return {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(mask),
            "labels": torch.from_numpy(labels), "word_pos": torch.from_numpy(word_pos),
            "word_mask": torch.from_numpy(word_mask), "word_labels": torch.from_numpy(word_labels)}


class WindowBatches:
    """The training :class:`~bertkit.training.loop.BatchSource` over encoded windows.

    ``length_group`` batches are length-sorted together (1: random batches, as the stock
    recipe). With ``token_weighted`` each batch carries ``loss_scale`` = its labelled pieces over the mean
    per batch, so the model's mean token loss times it weighs every labelled token alike whatever
    the (length-grouped) batch it falls in.

    With ``pack = (capacity, start, row_multiple)`` each batch also carries its packing plan
    (:func:`bertkit.inputs.packing.plan_batch`; with ``row_multiple`` > 1, the GPU setting, row
    lengths rounded up to a multiple of ``capacity`` too), made here (in the prefetch worker)
    rather than in the step, and ``T``/``K`` are rounded up to a multiple of ``multiple``: the
    step then reads nothing back to the host and its shapes come from a small set of buckets.
    """

    def __init__(self, windows: Sequence[Window], batch_size: int, seed: int, pad_id: int,
                 token_weighted: bool = True, sources: Sequence[str] | None = None,
                 length_group: int = 50, pack: tuple[int, int, int] | None = None,
                 multiple: int = 1) -> None:
        self.pack, self.multiple = pack, multiple
        self.windows = list(windows)
        self.lengths = np.asarray([len(w.input_ids) for w in self.windows])
        self.labelled = np.asarray([int((w.labels != IGNORE).sum()) for w in self.windows])
        self.batch_size, self.seed, self.pad_id = batch_size, seed, pad_id
        self.token_weighted = token_weighted
        self.sources = sources
        self.length_group = length_group

    def _plan(self, epoch: int) -> list[np.ndarray]:
        return length_grouped_batches(self.lengths, self.batch_size, self.seed + epoch,
                                      self.length_group)

    def num_batches(self, epoch: int) -> int:
        return -(-len(self.windows) // self.batch_size)

    def mean_labelled_tokens(self) -> float:
        """Labelled pieces (label != -100) per batch, averaged over an epoch's batches."""
        return max(float(self.labelled.sum()) / max(self.num_batches(0), 1), 1.0)

    def describe(self, epoch: int, index: int) -> str:
        """The source lines of batch ``index`` of ``epoch`` (for a non-finite loss report)."""
        idx = self._plan(epoch)[index]
        if self.sources is None:
            return f"training sentences {sorted(int(self.windows[i].sentence) for i in idx)}"
        return ", ".join(sorted({self.sources[self.windows[i].sentence] for i in idx}))

    def iter_batches(self, epoch: int, start: int = 0) -> Iterator[dict[str, torch.Tensor]]:
        norm = self.mean_labelled_tokens()
        for idx in self._plan(epoch)[start:]:
            batch = collate([self.windows[i] for i in idx], self.pad_id, self.multiple)
            if self.pack is not None:
                capacity, start, rows = self.pack
                batch.update(plan_batch(batch["attention_mask"].sum(1).numpy(),
                                        batch["input_ids"].shape[1], capacity, start, rows,
                                        capacity if rows > 1 else 1))
            if self.token_weighted:
                batch["loss_scale"] = torch.tensor(float(self.labelled[idx].sum()) / norm)
            yield batch


__all__ = ["IGNORE", "Window", "EncodeReport", "WindowBatches", "collate", "encode",
           "length_grouped_batches", "owners", "window_bounds"]  # the last four: bertkit.inputs.windowing/batching
