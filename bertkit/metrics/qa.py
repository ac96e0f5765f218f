"""Extractive question answering scores, exactly as the official SQuAD scorers compute them.

* SQuAD v1.1 (``evaluate-v1.1.py``, Rajpurkar et al., 2016): exact match (EM) and token F1 of
  the normalised answer, each the maximum over the gold answers, averaged over questions
  (percent).
* SQuAD 2.0 (``evaluate-v2.0.py``, Rajpurkar et al., 2018): the same, but a gold answer that
  normalises to nothing is dropped and an unanswerable question's only gold answer is ``""``
  (an empty prediction scores 1 there, anything else 0); scores split into ``HasAns``/``NoAns``;
  with a no-answer score per question (here the difference ``null score - best span score`` of
  :mod:`bertkit.tasks.qa.decode`), the best threshold for EM and for F1 (``best_exact``,
  ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh``), found by the official script's sweep.

Normalisation (both versions): lowercase, ASCII punctuation (``string.punctuation``) removed,
the articles ``a``/``an``/``the`` dropped (whole words), whitespace collapsed.

One deviation, stated: a question without a prediction scores 0 EM and 0 F1 and counts in the
total (``missing`` says how many). The v1.1 script does the same; the v2.0 script drops such a
question from the total, which would raise the score of a system that skips hard questions.
"""

from __future__ import annotations

import collections
import re
import string
from typing import Iterable, Mapping, Sequence

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
    """The official normalisation: lowercase, punctuation removed, articles dropped, whitespace
    collapsed.

    >>> normalize_answer("The  Denver Broncos!")
    'denver broncos'
    """
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(gold: str, pred: str) -> int:
    """1 when the normalised strings are equal, else 0."""
    return int(normalize_answer(gold) == normalize_answer(pred))


def token_f1(gold: str, pred: str, version: str = "2.0") -> float:
    """Token F1 of the normalised answers (bag of tokens).

    ``version`` ``"2.0"``: when either side has no tokens, 1 if both have none, else 0 (the v2.0
    script); ``"1.1"``: 0 whenever no token is shared (the v1.1 script).

    >>> round(token_f1("the cat sat", "cat sat down"), 4)
    0.8
    """
    gold_toks = normalize_answer(gold).split() if gold else []
    pred_toks = normalize_answer(pred).split() if pred else []
    if version != "1.1" and (not gold_toks or not pred_toks):
        return float(gold_toks == pred_toks)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_toks), same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def gold_answers(answers: Sequence[str], version: str = "2.0") -> list[str]:
    """The gold answers a question is scored against: v2.0 drops answers that normalise to
    nothing and uses ``[""]`` when none is left (an unanswerable question); v1.1 keeps all."""
    if version == "1.1":
        return list(answers)
    kept = [a for a in answers if normalize_answer(a)]
    return kept or [""]


def raw_scores(gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str],
               version: str = "2.0") -> tuple[dict[str, float], dict[str, float], list[str]]:
    """Per question EM and F1 (each the max over its gold answers) and the ids without a
    prediction (scored 0 and 0).

    Args:
        gold: ``{question id: [gold answer text, ...]}`` (``[]`` for an unanswerable question).
        predictions: ``{question id: predicted text}`` (``""`` = no answer).
    """
    exact, f1, missing = {}, {}, []
    for qid, answers in gold.items():
        if qid not in predictions:
            missing.append(qid)
            exact[qid] = f1[qid] = 0.0
            continue
        pred = predictions[qid]
        golds = gold_answers(answers, version)
        exact[qid] = float(max(exact_match(a, pred) for a in golds))
        f1[qid] = max(token_f1(a, pred, version) for a in golds)
    return exact, f1, missing


def _mean(scores: Mapping[str, float], ids: Iterable[str]) -> float:
    ids = list(ids)
    return 100.0 * sum(scores[k] for k in ids) / len(ids) if ids else 0.0


def best_threshold(span_predictions: Mapping[str, str], scores: Mapping[str, float],
                   na_scores: Mapping[str, float], has_answer: Mapping[str, bool],
                   total: int | None = None) -> tuple[float, float]:
    """The official ``find_best_thresh`` sweep: the threshold ``t`` on the no-answer score that
    maximises the score when a question is answered empty iff ``na_scores[q] > t``.

    Starts with every question answered empty (each unanswerable one right), then admits the
    questions in increasing no-answer score: an answerable one adds its score, an unanswerable
    one with a non-empty span loses 1.

    Args:
        span_predictions: the answer each question gets when not answered empty.
        scores: EM or F1 (0-1) of ``span_predictions`` per question.
        na_scores: no-answer score per question (higher = more likely unanswerable).
        has_answer: whether each question has a gold answer.
        total: the denominator (default ``len(scores)``; missing predictions count in it).

    Returns:
        (best score in percent, its threshold; 0.0 when answering everything empty is best).
    """
    cur = best = sum(1 for q in na_scores if not has_answer[q])
    thresh = 0.0
    for qid in sorted(na_scores, key=lambda k: na_scores[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            diff = scores[qid]
        else:
            diff = -1 if span_predictions[qid] else 0
        cur += diff
        if cur > best:
            best, thresh = cur, na_scores[qid]
    return 100.0 * best / (total or len(scores) or 1), float(thresh)


def squad_scores(gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str],
                 version: str = "2.0", na_scores: Mapping[str, float] | None = None,
                 span_predictions: Mapping[str, str] | None = None) -> dict:
    """The official scorer's output for ``predictions`` (module docstring).

    Args:
        gold: ``{question id: [gold answer texts]}`` (empty list: unanswerable).
        predictions: ``{question id: text}`` as answered (``""``: no answer).
        version: ``"1.1"`` or ``"2.0"``.
        na_scores: v2.0: no-answer score per question (``null score - best span score``); with
            it, ``best_*`` keys from :func:`best_threshold`.
        span_predictions: the best non-empty span per question for the threshold sweep
            (default: ``predictions``, as the official script does).

    Returns:
        ``exact``, ``f1`` (percent), ``total``, ``missing``; v2.0 also ``HasAns_*``/``NoAns_*``
        (``exact``, ``f1``, ``total``) when such questions exist and, with ``na_scores``,
        ``best_exact``, ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh``.
    """
    exact, f1, missing = raw_scores(gold, predictions, version)
    out = {"exact": _mean(exact, gold), "f1": _mean(f1, gold), "total": len(gold),
           "missing": len(missing)}
    if version == "1.1":
        return out
    has = {q: bool(a) for q, a in gold.items()}  # the official make_qid_to_has_ans
    for name, ids in (("HasAns", [q for q in gold if has[q]]),
                      ("NoAns", [q for q in gold if not has[q]])):
        if ids:
            out.update({f"{name}_exact": _mean(exact, ids), f"{name}_f1": _mean(f1, ids),
                        f"{name}_total": len(ids)})
    if na_scores is not None:
        spans = span_predictions if span_predictions is not None else predictions
        present = [q for q in gold if q in spans and q in na_scores]
        s_exact, s_f1, _ = raw_scores({q: gold[q] for q in present}, spans, version)
        na = {q: float(na_scores[q]) for q in present}
        for key, sc in (("exact", s_exact), ("f1", s_f1)):
            best, thresh = best_threshold(spans, sc, na, has, total=len(gold))
            out[f"best_{key}"], out[f"best_{key}_thresh"] = best, thresh
    return out
