"""Texts (and text pairs) -> WordPiece inputs, long texts kept head+tail or windowed, batches.

* An input is ``[CLS] text [SEP]`` or ``[CLS] text [SEP] pair [SEP]`` (BERT's form; token type 0
  up to the first ``[SEP]``, 1 after), as ``run_glue.py`` builds it.
* Nothing is cut silently. ``head-tail`` (default): a text over the budget keeps its first
  quarter and its last three quarters of the budget (Sun et al., 2019, §5.3); with a pair the
  budget is shared longest-first (as the tokenizer's ``longest_first``) and each part keeps its
  own head and tail. Every shortened input is counted (:attr:`Encoded.shortened`).
* ``windows``: a text over the budget becomes several inputs over windows that overlap by half
  a window (a pair part, if any, is kept whole up to half the budget, then head+tail), all
  pointing at the same example; in training each window is an input with the example's label,
  in evaluation and prediction :func:`pool_logits` averages the windows' logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from bertkit.inputs.batching import pad_right

IGNORE = -100


@dataclass
class Encoded:
    """One model input: ``input_ids`` ``[T]``, ``first`` (pieces with token type 0, i.e.
    ``[CLS] text [SEP]``), the gold ``label`` (an id, -100 when unknown; or ``[C]`` float
    indicators with multi-label data), the ``example`` it belongs to, and whether the text was
    ``shortened`` (head+tail) or windowed."""

    input_ids: np.ndarray
    first: int
    label: int | np.ndarray
    example: int
    shortened: bool


def head_tail(ids: Sequence[int], keep: int) -> list[int]:
    """The first quarter and last three quarters of a ``keep``-piece budget of ``ids``.

    >>> head_tail(list(range(10)), 4)
    [0, 7, 8, 9]
    >>> head_tail([1, 2], 4)
    [1, 2]
    """
    ids = list(ids)
    if len(ids) <= keep:
        return ids
    if keep <= 0:
        return []
    head = keep // 4
    return ids[:head] + ids[len(ids) - (keep - head):]


def share_budget(a: int, b: int, budget: int) -> tuple[int, int]:
    """Pieces kept of two parts of ``a`` and ``b`` pieces within ``budget`` (longest first).

    >>> share_budget(300, 20, 100)
    (80, 20)
    >>> share_budget(300, 300, 100)
    (50, 50)
    """
    if a + b <= budget:
        return a, b
    short = min(a, b, budget // 2)
    long_ = budget - short
    return (long_, short) if a >= b else (short, long_)


def _windows(ids: list[int], size: int) -> list[list[int]]:
    """Windows of ``size`` pieces over ``ids``, overlapping by half a window, covering all."""
    if len(ids) <= size:
        return [ids]
    step = max(1, size // 2)
    out, start = [], 0
    while True:
        out.append(ids[start:start + size])
        if start + size >= len(ids):
            return out
        start = min(start + step, len(ids) - size)


def encode(examples: Sequence, tokenizer, label2id: dict[str, int], max_length: int,
           long_text: str = "head-tail", multi_label: bool = False) -> list[Encoded]:
    """Encode examples (``text``, ``text_pair``, ``label``) as model inputs.

    Args:
        examples: :class:`~bertkit.tasks.cls.data.TextExample` objects.
        tokenizer: a tokenizer with ``cls_token_id`` and ``sep_token_id``.
        label2id: the model's labels; a gold label missing from it is encoded as -100.
        max_length: pieces per input, specials included (>= 8).
        long_text: ``head-tail`` or ``windows`` (module docstring).
        multi_label: labels are lists, encoded as ``[C]`` float indicators.

    Returns:
        one :class:`Encoded` per example (head-tail), or one per window (windows), in order.
    """
    texts = [ex.text for ex in examples]
    pairs = [ex.text_pair or "" for ex in examples]
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    pair_ids = tokenizer(pairs, add_special_tokens=False)["input_ids"] if any(pairs) else \
        [[] for _ in examples]
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    out = []
    for i, ex in enumerate(examples):
        a, b = list(ids[i]), list(pair_ids[i])
        has_pair = ex.text_pair is not None
        budget = max_length - (3 if has_pair else 2)
        if multi_label:
            label = np.zeros(len(label2id), dtype=np.float32)
            for lab in ex.label or []:
                if lab in label2id:
                    label[label2id[lab]] = 1.0
        else:
            label = label2id.get(ex.label, IGNORE) if ex.label is not None else IGNORE
        if long_text == "windows" and len(a) + len(b) > budget:
            kb = min(len(b), budget // 2)
            b_kept = head_tail(b, kb)
            parts = [(w, b_kept) for w in _windows(a, budget - kb)]
        else:
            ka, kb = share_budget(len(a), len(b), budget)
            parts = [(head_tail(a, ka), head_tail(b, kb))]
        shortened = len(a) + len(b) > budget
        for pa, pb in parts:
            seq = [cls_id, *pa, sep_id] + ([*pb, sep_id] if has_pair else [])
            out.append(Encoded(np.asarray(seq, dtype=np.int64), len(pa) + 2, label, i,
                               shortened))
    return out


def collate(items: Sequence[Encoded], pad_id: int, token_types: bool = True
            ) -> dict[str, torch.Tensor]:
    """Pad to the batch's longest input (no further).

    Returns:
        ``input_ids``, ``attention_mask`` (and ``token_type_ids`` when ``token_types``)
        ``[B, T]``; ``labels`` ``[B]`` long, or ``[B, C]`` float with multi-label data.
    """
    input_ids, mask = pad_right([x.input_ids for x in items], pad_id)
    T = input_ids.shape[1]
    out = {"input_ids": torch.from_numpy(input_ids),
           "attention_mask": torch.from_numpy(mask.astype(np.int64))}
    if token_types:
        firsts = np.asarray([x.first for x in items])
        types = (np.arange(T)[None, :] >= firsts[:, None]) & mask
        out["token_type_ids"] = torch.from_numpy(types.astype(np.int64))
    if isinstance(items[0].label, np.ndarray):
        out["labels"] = torch.from_numpy(np.stack([x.label for x in items]))
    else:
        out["labels"] = torch.tensor([x.label for x in items], dtype=torch.long)
    return out


def pool_logits(logits: np.ndarray, example: np.ndarray, n: int) -> np.ndarray:
    """Average the logits ``[N_inputs, C]`` of the inputs of each example (windows).

    Args:
        example: ``[N_inputs]`` the example each input belongs to (0..n-1).
        n: number of examples.

    Returns:
        ``[n, C]`` mean logits per example.

    >>> pool_logits(np.array([[1., 0.], [3., 2.], [5., 5.]]), np.array([0, 0, 1]), 2).tolist()
    [[2.0, 1.0], [5.0, 5.0]]
    """
    sums = np.zeros((n, logits.shape[1]), dtype=np.float64)
    np.add.at(sums, example, logits)
    counts = np.bincount(example, minlength=n).clip(min=1)
    return (sums / counts[:, None]).astype(np.float32)
