"""Length-grouped training batches, shared by every fine-tuning task.

:func:`length_grouped_batches` is Hugging Face's ``group_by_length`` sampler in numpy;
:class:`GroupedBatches` is the training :class:`~bertkit.training.loop.BatchSource` built on it
for any list of encoded items and a collate function (a task supplies only the collate).
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import numpy as np
import torch


def pad_right(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad integer sequences to the longest of them (no further), without a Python loop.

    Args:
        seqs: ``B`` non-empty sequences of ids (lists or 1-D arrays).
        pad_id: the id written after each sequence.

    Returns:
        ``ids`` ``[B, T]`` int64 and ``mask`` ``[B, T]`` bool (True on real positions), T the
        longest length.

    >>> ids, mask = pad_right([[5, 6, 7], [8]], 0)
    >>> ids.tolist(), mask.sum(1).tolist()
    ([[5, 6, 7], [8, 0, 0]], [3, 1])
    """
    lengths = np.fromiter((len(x) for x in seqs), dtype=np.int64, count=len(seqs))
    mask = np.arange(int(lengths.max()))[None, :] < lengths[:, None]
    ids = np.full(mask.shape, pad_id, dtype=np.int64)
    ids[mask] = np.concatenate([np.asarray(x, dtype=np.int64) for x in seqs])
    return ids, mask


def length_grouped_batches(lengths: np.ndarray, batch_size: int, seed: int,
                           group: int = 50) -> list[np.ndarray]:
    """Shuffled batches of similar length (as Hugging Face's ``group_by_length``).

    Indices are shuffled with ``seed``, cut into mega-batches of ``group * batch_size``, each sorted
    by length, cut into batches, and the batch order shuffled again: padding is nearly minimal
    while the data order stays random. Deterministic given ``seed``.

    Args:
        lengths: ``[N]`` ints, the length of each item (pieces).
        batch_size: items per batch.
        seed: the order's seed (the caller adds the epoch).
        group: batches sorted by length together; 1 gives random batches.

    Returns:
        arrays of at most ``batch_size`` indices, covering ``0..N-1`` once.
    """
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(lengths))
    batches = []
    mega = batch_size * group
    for m in range(0, len(perm), mega):
        chunk = perm[m:m + mega]
        chunk = chunk[np.argsort(-lengths[chunk], kind="stable")]
        batches.extend(chunk[b:b + batch_size] for b in range(0, len(chunk), batch_size))
    order = rng.permutation(len(batches))
    return [batches[o] for o in order]


class GroupedBatches:
    """Length-grouped, shuffled training batches of encoded ``items`` (a
    :class:`~bertkit.training.loop.BatchSource`); the order is a function of ``seed + epoch`` only,
    so a resumed run replays it exactly.

    Args:
        items: encoded examples.
        lengths: ``[N]`` length of each item (pieces), for grouping.
        batch_size: items per batch.
        seed: data-order seed.
        collate: list of items -> dict of padded tensors (the task's own).
        group: batches sorted by length together (1: random batches).
    """

    def __init__(self, items: Sequence, lengths: Sequence[int], batch_size: int, seed: int,
                 collate: Callable[[list], dict[str, torch.Tensor]], group: int = 50) -> None:
        self.items = list(items)
        self.lengths = np.asarray(lengths)
        self.batch_size, self.seed, self.collate, self.group = batch_size, seed, collate, group

    def num_batches(self, epoch: int) -> int:
        return -(-len(self.items) // self.batch_size)

    def iter_batches(self, epoch: int, start: int = 0) -> Iterator[dict[str, torch.Tensor]]:
        plan = length_grouped_batches(self.lengths, self.batch_size, self.seed + epoch, self.group)
        for idx in plan[start:]:
            yield self.collate([self.items[i] for i in idx])
