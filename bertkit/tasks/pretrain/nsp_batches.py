"""Training batches of NSP sentence pairs (``bertkit pretrain --nsp``), masked on the fly.

Each epoch's pairs come from :func:`bertkit.tasks.pretrain.nsp.epoch_pairs` with ``(seed,
epoch)``; they are grouped by length (sorted within windows of 50 batches, then the batches
shuffled) and each batch is padded only to its longest pair. Masking is the packed path's: the
configured strategy with a generator seeded by ``(seed, epoch, batch index)``; ``[CLS]``,
``[SEP]`` and padding are special tokens, so they are never masked.

Reference: Devlin et al. (2019), sec. 3.1 and appendix A.2.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import torch

from bertkit.inputs.batching import pad_right
from bertkit.masking import Masker
from bertkit.tasks.pretrain.batches import batch_generator
from bertkit.tasks.pretrain.nsp import PairInstance, epoch_pairs

GROUP_WINDOW = 50  # batches per length-sorting window


def pad_pairs(pairs: Sequence[PairInstance], pad_id: int) -> dict[str, torch.Tensor]:
    """Pairs as ``input_ids``, ``token_type_ids``, ``attention_mask`` ``[B, L]`` (L: the longest
    pair; padding has id ``pad_id``, type 0, mask 0) and ``next_sentence_label`` ``[B]``."""
    ids, mask = pad_right([p.input_ids for p in pairs], pad_id)
    types = np.zeros(ids.shape, dtype=np.int64)
    types[mask] = np.concatenate([p.token_type_ids for p in pairs])
    return {"input_ids": torch.from_numpy(ids), "token_type_ids": torch.from_numpy(types),
            "attention_mask": torch.from_numpy(mask.astype(np.int64)),
            "next_sentence_label": torch.tensor([p.next_sentence_label for p in pairs])}


class NSPBatches:
    """A :class:`bertkit.training.BatchSource` of masked NSP pairs.

    Each batch is ``{"input_ids", "token_type_ids", "attention_mask", "labels": [B, L],
    "next_sentence_label": [B]}`` (L: the batch's longest pair, at most ``max_seq_length``).

    Args:
        documents: the corpus as lists of sentences (``[n]`` token ids each).
        max_seq_length: tokens per pair including ``[CLS]`` and two ``[SEP]``.
        cls_id / sep_id / pad_id: the special token ids.
        batch_size: pairs per batch (the last batch of an epoch may be smaller).
        masker: the masking strategy (token or whole-word).
        seed: pairs, order and masks derive from it.
        short_seq_prob: BERT's chance of a shorter target length per document.
    """

    def __init__(self, documents: Sequence[Sequence[np.ndarray]], max_seq_length: int, cls_id: int,
                 sep_id: int, pad_id: int, batch_size: int, masker: Masker, seed: int,
                 short_seq_prob: float = 0.1) -> None:
        self.documents, self.max_seq_length = documents, max_seq_length
        self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id
        self.batch_size, self.masker, self.seed = batch_size, masker, seed
        self.short_seq_prob = short_seq_prob
        self._cached: tuple[int, list[PairInstance], list[np.ndarray]] | None = None

    def epoch(self, epoch: int) -> tuple[list[PairInstance], list[np.ndarray]]:
        """The pairs of ``epoch`` and its batches (arrays of pair indices), built once per epoch."""
        if self._cached is None or self._cached[0] != epoch:
            pairs = epoch_pairs(self.documents, self.max_seq_length, self.cls_id, self.sep_id,
                                self.seed, epoch, self.short_seq_prob)
            lengths = np.fromiter((len(p.input_ids) for p in pairs), dtype=np.int64,
                                  count=len(pairs))
            window = self.batch_size * GROUP_WINDOW
            batches = []
            for w in range(0, len(pairs), window):  # pairs are already shuffled
                idx = w + np.argsort(lengths[w:w + window], kind="stable")
                batches += [idx[k:k + self.batch_size] for k in range(0, len(idx), self.batch_size)]
            order = np.random.default_rng([self.seed % 2**32, epoch, 1]).permutation(len(batches))
            self._cached = (epoch, pairs, [batches[i] for i in order])
        return self._cached[1], self._cached[2]

    def num_batches(self, epoch: int) -> int:
        return len(self.epoch(epoch)[1])

    def iter_batches(self, epoch: int, start: int = 0) -> Iterator[dict[str, torch.Tensor]]:
        pairs, batches = self.epoch(epoch)
        for k in range(start, len(batches)):
            batch = pad_pairs([pairs[i] for i in batches[k].tolist()], self.pad_id)
            masked = self.masker(batch["input_ids"], batch_generator(self.seed, epoch, k))
            batch["input_ids"], batch["labels"] = masked.input_ids, masked.labels
            yield batch

    def describe(self, epoch: int, index: int) -> str:
        return f"NSP batch {index + 1} of epoch {epoch + 1} (pairs of seed {self.seed})"
