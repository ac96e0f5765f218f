"""Start/end logits of every window -> one answer per question (BERT, Devlin et al., 2019, §4.2
and §4.3; the post-processing of Hugging Face ``postprocess_qa_predictions``), vectorised over
all windows at once.

Per window: the ``n_best`` highest start logits and ``n_best`` highest end logits among the
window's **context** pieces (never the question or special pieces), every pair with
``start <= end`` and at most ``max_answer_length`` pieces, scored ``start logit + end logit``;
the best pair of any window of a question is its answer, its text cut from the original context
by the pieces' character offsets. A question with no valid pair in any window gets ``""``.

SQuAD 2.0: the no-answer score of a window is its ``[CLS]`` score (start + end logit at index
0); a question's is the minimum over its windows (as BERT and ``run_qa.py``). The question is
answered empty when ``null score - best span score > threshold`` (default 0.0, BERT's
``null_score_diff_threshold``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEG = -1e9


@dataclass
class Answers:
    """Decoded answers of ``N`` questions.

    Attributes:
        text: best span text per question (``""`` when no valid span exists).
        start / end: character offsets ``[start, end)`` of ``text`` in the context (-1 for none).
        span_score: ``[N]`` start + end logit of the best span (-inf-like ``-1e9`` when none).
        null_score: ``[N]`` minimum ``[CLS]`` score over the question's windows.
    """

    text: list[str]
    start: np.ndarray
    end: np.ndarray
    span_score: np.ndarray
    null_score: np.ndarray

    @property
    def null_diff(self) -> np.ndarray:
        """``[N]`` ``null_score - span_score``: above the threshold, the answer is empty."""
        return self.null_score - self.span_score

    def final(self, threshold: float | None) -> list[str]:
        """The answers given: with a ``threshold`` (SQuAD 2.0) empty where ``null_diff >
        threshold``; None: always the best span."""
        if threshold is None:
            return list(self.text)
        empty = self.null_diff > threshold
        return ["" if e else t for t, e in zip(self.text, empty)]


def best_spans(start_logits: np.ndarray, end_logits: np.ndarray, ctx_start: np.ndarray,
               ctx_end: np.ndarray, n_best: int = 20, max_answer_length: int = 30
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The best valid span of every window.

    Args:
        start_logits / end_logits: ``[F, T]`` float (padding anywhere outside the context).
        ctx_start / ctx_end: ``[F]`` first and last context piece of each window.
        n_best: start and end candidates per window.
        max_answer_length: most pieces in an answer.

    Returns:
        ``start``, ``end`` ``[F]`` piece indices and ``score`` ``[F]`` (``start + end`` logit;
        ``NEG`` where the window has no valid span).
    """
    F, T = start_logits.shape
    pos = np.arange(T)[None, :]
    ctx = (pos >= ctx_start[:, None]) & (pos <= ctx_end[:, None])
    s = np.where(ctx, start_logits, NEG)
    e = np.where(ctx, end_logits, NEG)
    k = min(n_best, T)
    top_s = np.argpartition(-s, k - 1, axis=1)[:, :k]  # [F, k]
    top_e = np.argpartition(-e, k - 1, axis=1)[:, :k]
    rows = np.arange(F)[:, None]
    ss, es = s[rows, top_s], e[rows, top_e]  # [F, k]
    length = top_e[:, None, :] - top_s[:, :, None]  # [F, k, k]
    valid = (length >= 0) & (length < max_answer_length) \
        & (ss[:, :, None] > NEG / 2) & (es[:, None, :] > NEG / 2)
    score = np.where(valid, ss[:, :, None] + es[:, None, :], 2 * NEG)
    flat = score.reshape(F, -1)
    best = flat.argmax(1) if F else np.zeros(0, dtype=np.int64)
    best_score = flat[np.arange(F), best] if F else np.zeros(0)
    si, ei = np.divmod(best, k)
    start = top_s[np.arange(F), si]
    end = top_e[np.arange(F), ei]
    none = best_score <= NEG
    return np.where(none, -1, start), np.where(none, -1, end), np.where(none, NEG, best_score)


def decode(start_logits: np.ndarray, end_logits: np.ndarray, features, contexts: list[str],
           n_best: int = 20, max_answer_length: int = 30) -> Answers:
    """One answer per question (module docstring).

    Args:
        start_logits / end_logits: ``[F, T]`` per window (padded).
        features: the :class:`~bertkit.tasks.qa.encoding.Features` the logits are of.
        contexts: the ``N`` original contexts, in question order.

    Returns:
        :class:`Answers` of the ``N`` questions.
    """
    n = len(contexts)
    start, end, score = best_spans(start_logits, end_logits, features.ctx_start,
                                   features.ctx_end, n_best, max_answer_length)
    null = start_logits[:, 0] + end_logits[:, 0]
    ex = features.example
    null_q = np.full(n, np.inf)
    np.minimum.at(null_q, ex, null)
    null_q[np.isinf(null_q)] = 0.0
    # the best window per question: sort by (question, -score), take the first of each
    order = np.lexsort((-score, ex))
    first = order[np.r_[True, ex[order][1:] != ex[order][:-1]]] if len(ex) else order
    span_score = np.full(n, NEG)
    span_score[ex[first]] = score[first]
    text, c_start, c_end = [""] * n, np.full(n, -1), np.full(n, -1)
    for f in first:
        q = ex[f]
        if score[f] <= NEG:
            continue
        offs = features.offsets[f]
        a, b = int(offs[start[f], 0]), int(offs[end[f], 1])
        text[q], c_start[q], c_end[q] = contexts[q][a:b], a, b
    return Answers(text, c_start, c_end, span_score, null_q)
