"""Questions and contexts -> model inputs: ``[CLS] question [SEP] context-window [SEP]``.

* The question is capped at ``max_question_length`` pieces (cut at the end of its last kept
  piece; counted, never an error), as Google's BERT and SpanBERT ``max_query_length`` (64).
  Hugging Face ``run_qa.py`` instead fails on a question longer than the window budget.
* A context longer than the budget is read whole in windows, each the question plus a slice of
  the context. ``doc_stride`` is the **overlap** in pieces between consecutive windows (Hugging
  Face ``run_qa.py``'s ``--doc_stride``, the tokenizer's ``stride``), not the step between window
  starts as in Google's ``run_squad.py`` and SpanBERT (their step = ``doc_stride``). Defaults as
  ``run_qa.py``: 384 pieces a window, overlap 128.
* Labels per window (training): the first and last piece of the answer when the whole answer is
  inside the window's context, else both at ``[CLS]`` (index 0), as in BERT (Devlin et al., 2019,
  §4.3) and ``run_qa.py``; an unanswerable question is labelled ``[CLS]`` in every window. The
  first piece is the last context piece starting at or before the answer's first character, the
  last piece the first context piece ending at or after its last character (computed for all
  windows at once).

The character offsets of every window's context pieces are kept so that decoding
(:mod:`bertkit.tasks.qa.decode`) cuts answers from the original context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from bertkit.inputs.batching import pad_right


@dataclass
class Features:
    """The windows of a list of questions (``F`` windows, each at most ``max_length`` pieces).

    Attributes:
        input_ids / token_type_ids: one int array per window (token types None when the
            tokenizer has none).
        offsets: one ``[T, 2]`` int array per window: character start/end of each piece in the
            context (meaningful on context pieces only).
        example: ``[F]`` the question each window belongs to.
        ctx_start / ctx_end: ``[F]`` index of the first and last context piece of each window.
        start_positions / end_positions: ``[F]`` gold answer pieces (0 = ``[CLS]``: no answer in
            this window); zeros without answers.
        questions_cut: how many questions were cut at ``max_question_length``.
        answerable: ``[F]`` bool, whether the window's question has an answer (None: unknown,
            as in features built by hand); with ``start_positions == 0`` it marks the *null
            windows of answerable questions* that :class:`WindowBatches` may subsample.
    """

    input_ids: list[np.ndarray]
    token_type_ids: list[np.ndarray] | None
    offsets: list[np.ndarray]
    example: np.ndarray
    ctx_start: np.ndarray
    ctx_end: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    questions_cut: int = 0
    answerable: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def lengths(self) -> np.ndarray:
        """``[F]`` pieces per window."""
        return np.fromiter((len(x) for x in self.input_ids), dtype=np.int64,
                           count=len(self.input_ids))


def cap_questions(questions: Sequence[str], tokenizer, max_question_length: int
                  ) -> tuple[list[str], int]:
    """Questions without leading whitespace, each cut after its ``max_question_length``-th
    piece. Returns (questions, number cut)."""
    questions = [q.lstrip() for q in questions]
    enc = tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)
    out, cut = [], 0
    for q, ids, offs in zip(questions, enc["input_ids"], enc["offset_mapping"]):
        if len(ids) > max_question_length:
            q = q[:offs[max_question_length - 1][1]]
            cut += 1
        out.append(q)
    return out, cut


def label_windows(offsets: np.ndarray, ctx_mask: np.ndarray, answer_start: np.ndarray,
                  answer_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gold start/end pieces of every window at once.

    Args:
        offsets: ``[F, T, 2]`` character offsets of the pieces (padded).
        ctx_mask: ``[F, T]`` True on context pieces.
        answer_start / answer_end: ``[F]`` the answer's characters ``[start, end)`` in the
            context; ``-1`` for no answer.

    Returns:
        ``start``, ``end`` ``[F]``: piece indices, both 0 (``[CLS]``) when the window's context
        does not hold the whole answer or there is none.
    """
    F, T = ctx_mask.shape
    pos = np.arange(T)[None, :]
    first = np.where(ctx_mask, pos, T).min(1)
    last = np.where(ctx_mask, pos, -1).max(1)
    rows = np.arange(F)
    has = (answer_start >= 0) & (last >= 0)
    first_c, last_c = np.clip(first, 0, T - 1), np.clip(last, 0, T - 1)
    inside = has & (offsets[rows, first_c, 0] <= answer_start) \
        & (offsets[rows, last_c, 1] >= answer_end)
    start = np.where(ctx_mask & (offsets[:, :, 0] <= answer_start[:, None]), pos, -1).max(1)
    end = np.where(ctx_mask & (offsets[:, :, 1] >= answer_end[:, None]), pos, T).min(1)
    ok = inside & (start >= 0) & (end < T) & (end >= start)
    return np.where(ok, start, 0), np.where(ok, end, 0)


def encode(examples: Sequence, tokenizer, max_length: int = 384, doc_stride: int = 128,
           max_question_length: int = 64, chunk: int = 1000) -> Features:
    """Windows of every question (module docstring), labelled with each question's first gold
    answer (unanswerable: ``[CLS]``).

    Args:
        examples: :class:`~bertkit.tasks.qa.data.QAExample` (``question``, ``context``,
            ``answers``, ``starts``).
        tokenizer: a fast tokenizer (offsets and sequence ids).
        max_length: pieces per window, special pieces included.
        doc_stride: overlap in pieces between consecutive windows of one context.
        max_question_length: pieces a question keeps.
        chunk: questions tokenised per call.
    """
    ids_out: list[np.ndarray] = []
    types_out: list[np.ndarray] | None = [] if "token_type_ids" in \
        tokenizer.model_input_names else None
    offs_out: list[np.ndarray] = []
    example, cs, ce, sp, ep, has = [], [], [], [], [], []
    cut_total = 0
    for lo in range(0, len(examples), chunk):
        part = examples[lo:lo + chunk]
        questions, cut = cap_questions([x.question for x in part], tokenizer,
                                       max_question_length)
        cut_total += cut
        enc = tokenizer(questions, [x.context for x in part], truncation="only_second",
                        max_length=max_length, stride=doc_stride,
                        return_overflowing_tokens=True, return_offsets_mapping=True,
                        padding=False)
        owner = np.asarray(enc["overflow_to_sample_mapping"], dtype=np.int64)
        n = len(owner)
        seq = [[-1 if s is None else s for s in enc.sequence_ids(i)] for i in range(n)]
        seq_arr, _ = pad_right(seq, -1)
        offsets = [np.asarray(o, dtype=np.int64).reshape(-1, 2) for o in enc["offset_mapping"]]
        T = seq_arr.shape[1]
        off_arr = np.zeros((n, T, 2), dtype=np.int64)
        for i, o in enumerate(offsets):
            off_arr[i, :len(o)] = o
        ctx = seq_arr == 1
        pos = np.arange(T)[None, :]
        a_start = np.asarray([part[k].starts[0] if part[k].answers else -1 for k in owner],
                             dtype=np.int64)
        a_end = np.asarray([part[k].starts[0] + len(part[k].answers[0]) if part[k].answers
                            else -1 for k in owner], dtype=np.int64)
        s, e = label_windows(off_arr, ctx, a_start, a_end)
        ids_out.extend(np.asarray(x, dtype=np.int64) for x in enc["input_ids"])
        if types_out is not None:
            types_out.extend(np.asarray(x, dtype=np.int64) for x in enc["token_type_ids"])
        offs_out.extend(offsets)
        example.append(owner + lo)
        cs.append(np.where(ctx, pos, T).min(1))
        ce.append(np.where(ctx, pos, -1).max(1))
        sp.append(s)
        ep.append(e)
        has.append(a_start >= 0)

    def cat(parts):
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    return Features(ids_out, types_out, offs_out, cat(example), cat(cs), cat(ce), cat(sp),
                    cat(ep), cut_total,
                    np.concatenate(has) if has else np.zeros(0, dtype=bool))


def collate(features: Features, idx: Sequence[int], pad_id: int, labels: bool = True
            ) -> dict[str, torch.Tensor]:
    """Windows ``idx`` of ``features`` padded to their longest: ``input_ids``,
    ``attention_mask`` (``token_type_ids``) ``[B, T]``; with ``labels`` also
    ``start_positions``/``end_positions`` ``[B]``."""
    idx = np.asarray(idx)
    ids, mask = pad_right([features.input_ids[i] for i in idx], pad_id)
    out = {"input_ids": torch.from_numpy(ids),
           "attention_mask": torch.from_numpy(mask.astype(np.int64))}
    if features.token_type_ids is not None:
        types, _ = pad_right([features.token_type_ids[i] for i in idx], 0)
        out["token_type_ids"] = torch.from_numpy(types)
    if labels:
        out["start_positions"] = torch.from_numpy(features.start_positions[idx])
        out["end_positions"] = torch.from_numpy(features.end_positions[idx])
    return out


def null_windows(features: Features) -> np.ndarray:
    """``[F]`` bool: the windows of answerable questions that do not hold the answer (labelled
    ``[CLS]``). Windows of unanswerable questions (SQuAD 2.0) are not among them: they teach the
    no-answer score and are always trained on."""
    if features.answerable is None:
        return np.zeros(len(features), dtype=bool)
    return features.answerable & (features.start_positions == 0)


def kept_windows(features: Features, rate: float, seed: int, epoch: int) -> np.ndarray:
    """Indices of the training windows of one epoch: every window that holds its question's
    answer or belongs to an unanswerable question, and each null window of an answerable
    question (:func:`null_windows`) with probability ``rate``, drawn afresh every epoch from
    ``(seed, epoch)`` (so a resumed run draws the same).

    The subsampling of Alberti et al. (2019), "A BERT Baseline for the Natural Questions": most
    windows of a long document hold no answer, and their BERT-joint code keeps each such training
    window with a small probability (its ``include_unknowns`` flag). ``rate`` 1 keeps every
    window, as ``run_qa.py``.

    Returns:
        ``[K]`` int64 window indices, ascending; at least one when there are windows (all null
        and none drawn: the window with the smallest draw).
    """
    null = null_windows(features)
    if rate >= 1.0 or not null.any():
        return np.arange(len(features))
    draw = np.random.default_rng([seed, epoch, 0x6E756C6C]).random(len(features))
    keep = ~null | (draw < rate)
    if not keep.any():  # every window null and none drawn: an epoch still has one window
        keep[np.argmin(draw)] = True
    return np.flatnonzero(keep)


class WindowBatches:
    """Training batches of windows (a :class:`~bertkit.training.loop.BatchSource`), length
    grouped as :class:`bertkit.inputs.batching.GroupedBatches`, collated straight from the arrays.

    Args:
        null_window_rate: share of the null windows of answerable questions kept each epoch
            (:func:`kept_windows`); 1: every window.
    """

    def __init__(self, features: Features, batch_size: int, seed: int, pad_id: int,
                 group: int = 50, null_window_rate: float = 1.0) -> None:
        self.features, self.batch_size, self.seed = features, batch_size, seed
        self.pad_id, self.group = pad_id, group
        self.null_window_rate = null_window_rate
        self.lengths = features.lengths
        self._plans: dict[int, list[np.ndarray]] = {}

    def plan(self, epoch: int) -> list[np.ndarray]:
        """The epoch's batches of window indices (cached per epoch; a function of ``seed`` and
        ``epoch`` only)."""
        if epoch not in self._plans:
            from bertkit.inputs.batching import length_grouped_batches

            keep = kept_windows(self.features, self.null_window_rate, self.seed, epoch)
            plan = length_grouped_batches(self.lengths[keep], self.batch_size,
                                          self.seed + epoch, self.group)
            self._plans[epoch] = [keep[idx] for idx in plan]
        return self._plans[epoch]

    def num_batches(self, epoch: int) -> int:
        return len(self.plan(epoch))

    def iter_batches(self, epoch: int, start: int = 0):
        for idx in self.plan(epoch)[start:]:
            yield collate(self.features, idx, self.pad_id)
