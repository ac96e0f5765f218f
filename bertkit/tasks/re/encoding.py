"""Entity pairs -> WordPiece inputs with entity markers, truncation around the entities, batches.

* Markers (Baldini Soares et al., 2019, "entity markers"): ``[E1] … [/E1]`` around the first slot
  (``<< >>`` / subject) and ``[E2] … [/E2]`` around the second. They are added to the tokenizer as
  special tokens, so each is always one piece (never split, never ``[UNK]``), and the embedding
  matrix is resized. Typed markers (``[E1:CHEMICAL]`` …; Zhong & Chen, 2021; SpanBERT's TACRED
  setting replaces the entity by its type marker instead, Joshi et al., 2020) are used when the
  entity types are given and ``typed`` is on; an entity whose type has no marker gets the untyped one.
* Each example is tokenised as five segments (before, first entity, between, second entity, after)
  in one batched call, so marker positions are known exactly and text that happens to contain a
  marker string cannot shift them.
* Truncation (:func:`fit_segments`): an input longer than ``max_length`` loses context outside the
  entities first, then the middle of the text between them, then the ends of over-long entities;
  both entities' markers are always kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from bertkit.data.relations import RelationExample
from bertkit.inputs.batching import GroupedBatches, pad_right

IGNORE = -100
SPECIALS = 6  # [CLS] [E1] [/E1] [E2] [/E2] [SEP]


@dataclass(frozen=True)
class MarkerSet:
    """The marker strings: the untyped four, plus four per entity type when ``types`` is given."""

    types: tuple[str, ...] = ()

    def tokens(self) -> list[str]:
        """All marker strings, untyped first (their order fixes their token ids)."""
        out = ["[E1]", "[/E1]", "[E2]", "[/E2]"]
        for t in self.types:
            out += [f"[E1:{t}]", f"[/E1:{t}]", f"[E2:{t}]", f"[/E2:{t}]"]
        return out

    def pair(self, slot: int, etype: str | None) -> tuple[str, str]:
        """(opening, closing) marker for slot 1 or 2 and an entity type (None: untyped)."""
        if etype is not None and etype in self.types:
            return f"[E{slot}:{etype}]", f"[/E{slot}:{etype}]"
        return f"[E{slot}]", f"[/E{slot}]"

    def openers(self, slot: int) -> list[str]:
        """Every opening marker of ``slot`` (the pooling positions for ``entity-start``)."""
        return [f"[E{slot}]"] + [f"[E{slot}:{t}]" for t in self.types]


def add_markers(tokenizer, markers: MarkerSet) -> dict[str, int]:
    """Add the markers to ``tokenizer`` as special tokens (idempotent); return ``{marker: id}``.

    Added with ``normalized=False`` so an uncased tokenizer does not lower-case them.
    """
    from tokenizers import AddedToken

    new = [AddedToken(m, special=True, normalized=False, single_word=False, lstrip=False,
                      rstrip=False) for m in markers.tokens()
           if m not in tokenizer.get_vocab()]
    if new:
        tokenizer.add_tokens(new, special_tokens=True)
    return {m: tokenizer.convert_tokens_to_ids(m) for m in markers.tokens()}


@dataclass
class Encoded:
    """One model input: ``input_ids`` ``[T]``, gold ``label`` id (-100: none or unknown), and
    ``entity_pos`` ``[2]``: positions of the ``[E1]`` and ``[E2]`` opening markers."""

    input_ids: np.ndarray
    label: int
    entity_pos: np.ndarray
    truncated: bool


def fit_segments(lens: Sequence[int], budget: int) -> tuple[int, int, tuple[int, int], int, int]:
    """How many pieces of each segment to keep within ``budget`` pieces (markers excluded).

    Args:
        lens: piece counts of (before, first entity, between, second entity, after).
        budget: pieces allowed in total (``max_length - 6``), at least 2.

    Returns:
        (last pieces of *before*, first pieces of entity 1, (first, last) pieces of *between*,
        first pieces of entity 2, first pieces of *after*). Both entities keep at least one piece
        when they have any.

    >>> fit_segments([10, 2, 3, 2, 10], 11)
    (2, 2, (3, 0), 2, 2)
    >>> fit_segments([10, 2, 30, 2, 10], 8)
    (0, 2, (2, 2), 2, 0)
    """
    pre, a, mid, b, post = (int(x) for x in lens)
    if pre + a + mid + b + post <= budget:
        return pre, a, (mid, 0), b, post
    if a + b > budget:  # the entities alone do not fit: keep the start of each
        ka = min(a, max(budget // 2, budget - b))
        return 0, ka, (0, 0), min(b, budget - ka), 0
    room = budget - a - b
    if mid > room:  # drop the middle of the text between the entities
        return 0, a, ((room + 1) // 2, room // 2), b, 0
    room -= mid
    left = min(pre, room // 2)
    right = min(post, room - left)
    left = min(pre, room - right)
    return left, a, (mid, 0), b, right


def encode(examples: Sequence[RelationExample], tokenizer, marker_ids: dict[str, int],
           markers: MarkerSet, label2id: dict[str, int], max_length: int) -> list[Encoded]:
    """Encode entity pairs as ``[CLS] … [E1] e1 [/E1] … [E2] e2 [/E2] … [SEP]`` (text order).

    Args:
        examples: the pairs; a gold label missing from ``label2id`` is encoded as -100.
        tokenizer: a fast tokenizer with the markers added (:func:`add_markers`).
        marker_ids: ``{marker: id}`` from :func:`add_markers`.
        max_length: pieces per input, markers and ``[CLS]``/``[SEP]`` included (>= 8).

    Returns:
        one :class:`Encoded` per example, in order.
    """
    segs: list[str] = []
    firsts = []
    for ex in examples:
        first, second = (ex.e1, ex.e2) if ex.e1.start <= ex.e2.start else (ex.e2, ex.e1)
        firsts.append(ex.e1.start <= ex.e2.start)
        t = ex.text
        segs += [t[:first.start], t[first.start:first.end], t[first.end:second.start],
                 t[second.start:second.end], t[second.end:]]
    ids = tokenizer(segs, add_special_tokens=False)["input_ids"] if segs else []
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    budget = max_length - SPECIALS
    out = []
    for i, ex in enumerate(examples):
        pre, a, mid, b, post = (np.asarray(x, dtype=np.int64) for x in ids[5 * i:5 * i + 5])
        e1_first = firsts[i]
        (o1, c1), (o2, c2) = markers.pair(1, ex.e1.type), markers.pair(2, ex.e2.type)
        (fo, fc), (so, sc) = ((o1, c1), (o2, c2)) if e1_first else ((o2, c2), (o1, c1))
        kp, ka, (mh, mt), kb, kq = fit_segments([len(pre), len(a), len(mid), len(b), len(post)],
                                                budget)
        parts = [[cls_id], pre[len(pre) - kp:], [marker_ids[fo]], a[:ka], [marker_ids[fc]],
                 mid[:mh], mid[len(mid) - mt:] if mt else [], [marker_ids[so]], b[:kb],
                 [marker_ids[sc]], post[:kq], [sep_id]]
        input_ids = np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])
        pos_first = 1 + kp
        pos_second = pos_first + 1 + ka + 1 + mh + mt
        pos = [pos_first, pos_second] if e1_first else [pos_second, pos_first]
        truncated = (kp, ka, mh + mt, kb, kq) != (len(pre), len(a), len(mid), len(b), len(post))
        label = label2id.get(ex.label, IGNORE) if ex.label is not None else IGNORE
        out.append(Encoded(input_ids, label, np.asarray(pos, dtype=np.int64), truncated))
    return out


def collate(items: Sequence[Encoded], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad to the batch's longest input (no further).

    Returns:
        ``input_ids``, ``attention_mask`` ``[B, T]``; ``labels`` ``[B]``; ``entity_pos`` ``[B, 2]``.
    """
    input_ids, mask = pad_right([x.input_ids for x in items], pad_id)
    return {"input_ids": torch.from_numpy(input_ids),
            "attention_mask": torch.from_numpy(mask.astype(np.int64)),
            "labels": torch.tensor([x.label for x in items], dtype=torch.long),
            "entity_pos": torch.from_numpy(np.stack([x.entity_pos for x in items]))}


def PairBatches(items: Sequence[Encoded], batch_size: int, seed: int,
                pad_id: int) -> GroupedBatches:
    """The training :class:`~bertkit.training.loop.BatchSource`: length-grouped, shuffled batches
    of encoded pairs (:class:`bertkit.inputs.batching.GroupedBatches` with this module's :func:`collate`)."""
    return GroupedBatches(items, [len(x.input_ids) for x in items], batch_size, seed,
                          lambda xs: collate(xs, pad_id))
