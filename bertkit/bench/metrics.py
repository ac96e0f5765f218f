"""The metrics a suite may name, each with its averaging stated, and their per-item statistics.

A suite names a metric (``entity_f1``, ``token_macro_f1``, ``micro_f1``...). Each has:

* the key of the task's own score in ``results.json``'s ``test`` (the number the report shows is
  always the task's scorer's, never recomputed);
* the task kinds it applies to (None: any);
* where it can, a reader turning the run's test predictions into **sufficient statistics per test
  item** (an array ``[N, K]``) and a function scoring summed statistics. The paired bootstrap
  (:func:`bertkit.bench.stats.paired_bootstrap`) resamples items and sums rows, so a resampled
  score costs one matrix product. ``tests/bench/test_metrics.py`` checks that the statistics of a
  real run give back the task's own score.

Averaging, as the papers define it: entity F1 is strict IOB2 span F1, micro-averaged over types
(seqeval ``mode="strict"``; SciBERT, BLURB); PICO is token-level macro-F1 over the span types,
``O`` excluded (SciBERT on EBM-NLP); relation micro-F1 pools the relation labels without the
negative class (BLURB on ChemProt and DDI); macro-F1 is the unweighted mean over labels present in
gold or predictions (scikit-learn, as SciBERT on ACL-ARC and SciCite); Pearson for sentence
similarity (BLURB on BIOSSES).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class MetricSpec:
    """A suite metric.

    Attributes:
        name: the suite's name for it.
        key: its key in ``results.json``'s ``test`` (the task's own score).
        tasks: task kinds it applies to; None: any registered task.
        description: what is averaged how (shown by ``bench list`` and in the report).
        stats: ``stats(run_dir, results) -> [N, K] float array`` of per-test-item statistics;
            None when the predictions do not allow it (the report then says "no bootstrap").
        score: ``score(summed [..., K]) -> [...]`` in [0, 1] (or the metric's own unit).
    """

    name: str
    key: str
    tasks: tuple[str, ...] | None
    description: str
    stats: Callable[[Path, dict], np.ndarray] | None = None
    score: Callable[[np.ndarray], np.ndarray] | None = None


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """F1 = 2TP / (2TP + FP + FN), 0 where the denominator is 0."""
    den = 2 * tp + fp + fn
    return np.divide(2 * tp, den, out=np.zeros_like(den, dtype=float), where=den > 0)


def strict_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """Entity spans of an IOB2 sequence as seqeval's strict mode counts them: a span starts at
    ``B-X`` and runs over the following ``I-X``; an ``I-X`` that continues no span is no entity.

    >>> sorted(strict_spans(["B-A", "I-A", "O", "I-A", "B-B"]))
    [('A', 0, 2), ('B', 4, 5)]
    """
    spans, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, typ = tag.partition("-")
        if start is not None and not (prefix == "I" and typ == kind):
            spans.add((kind, start, i))
            start = kind = None
        if prefix == "B":
            start, kind = i, typ
    return spans


def read_conll_predictions(path: Path) -> list[tuple[list[str], list[str]]]:
    """``(gold tags, predicted tags)`` per sentence of a ``token gold predicted`` file (NER's
    ``test_predictions.conll``; blank lines between sentences)."""
    sentences, gold, pred = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        cols = line.split("\t") if line.strip() else []
        if not cols:
            if gold:
                sentences.append((gold, pred))
            gold, pred = [], []
            continue
        gold.append(cols[-2])
        pred.append(cols[-1])
    return sentences


def _entity_stats(run_dir: Path, results: dict) -> np.ndarray:
    rows = []
    for gold, pred in read_conll_predictions(run_dir / "test_predictions.conll"):
        g, p = strict_spans(gold), strict_spans(pred)
        rows.append((len(g & p), len(p - g), len(g - p)))
    return np.asarray(rows, dtype=float).reshape(-1, 3)


def _micro_score(s: np.ndarray) -> np.ndarray:
    return _f1(s[..., 0], s[..., 1], s[..., 2])


def _per_type(pairs: list[tuple[list[str], list[str]]], labels: list[str]) -> np.ndarray:
    """``[N, 3 L]``: per item and label, TP, FP, FN of its units (labels as given)."""
    index = {lab: i for i, lab in enumerate(labels)}
    out = np.zeros((len(pairs), 3 * len(labels)))
    for row, (gold, pred) in enumerate(pairs):
        for g, p in zip(gold, pred):
            if g == p and g in index:
                out[row, 3 * index[g]] += 1
                continue
            if p in index:
                out[row, 3 * index[p] + 1] += 1
            if g in index:
                out[row, 3 * index[g] + 2] += 1
    return out


def _macro_score(s: np.ndarray) -> np.ndarray:
    """Mean F1 over the labels present (in gold or predictions) of summed ``[..., 3 L]``."""
    s = s.reshape(*s.shape[:-1], -1, 3)
    f1 = _f1(s[..., 0], s[..., 1], s[..., 2])
    present = s.sum(axis=-1) > 0
    n = present.sum(axis=-1)
    return np.divide((f1 * present).sum(axis=-1), n, out=np.zeros(f1.shape[:-1]), where=n > 0)


def _token_stats(run_dir: Path, results: dict) -> np.ndarray:
    strip = [([t.split("-", 1)[1] if t != "O" else "O" for t in g],
              [t.split("-", 1)[1] if t != "O" else "O" for t in p])
             for g, p in read_conll_predictions(run_dir / "test_predictions.conll")]
    types = sorted({t for g, p in strip for t in g + p} - {"O"})
    return _per_type(strip, types)


def _jsonl_pairs(run_dir: Path) -> list[tuple[str, str]]:
    """``(gold, predicted)`` per line of ``test_predictions.jsonl`` (``label``, ``predicted``)."""
    lines = (run_dir / "test_predictions.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(x) for x in lines if x.strip()]
    return [(str(r["label"]), str(r["predicted"])) for r in rows]


def _label_stats(run_dir: Path, results: dict, drop_negative: bool) -> np.ndarray:
    pairs = _jsonl_pairs(run_dir)
    negative = results.get("negative_label") if drop_negative else None
    labels = sorted({x for pair in pairs for x in pair} - {negative})
    return _per_type([([g], [p]) for g, p in pairs], labels)


def _pooled(s: np.ndarray) -> np.ndarray:
    """Micro-F1 of summed per-label ``[..., 3 L]`` statistics (all labels pooled)."""
    s = s.reshape(*s.shape[:-1], -1, 3).sum(axis=-2)
    return _f1(s[..., 0], s[..., 1], s[..., 2])


def _accuracy_stats(run_dir: Path, results: dict) -> np.ndarray:
    return np.asarray([(float(g == p), 1.0) for g, p in _jsonl_pairs(run_dir)]).reshape(-1, 2)


def _ratio(s: np.ndarray) -> np.ndarray:
    return np.divide(s[..., 0], s[..., 1], out=np.zeros(s.shape[:-1]), where=s[..., 1] > 0)


def _hoc_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 3]``: per abstract, TP, FP, FN of its hallmark indicators (gold ``label`` and
    ``predicted`` label lists; ``null``: none predicted). Pooled, F1 = 2TP / (2TP + FP + FN) is
    BLURB's HoC score on one row per document (the cls task's ``hoc_f1``, issue 42)."""
    lines = (run_dir / "test_predictions.jsonl").read_text(encoding="utf-8").splitlines()
    rows = []
    for line in filter(str.strip, lines):
        r = json.loads(line)
        gold, pred = set(r.get("label") or []), set(r.get("predicted") or [])
        rows.append((len(gold & pred), len(pred - gold), len(gold - pred)))
    return np.asarray(rows, dtype=float).reshape(-1, 3)


def _pearson_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 6]``: x, y, xy, x², y², 1 of each pair (gold ``score``/``label``, ``predicted``).
    The predictions file holds scores to 6 decimals: where the predictions barely vary (an
    untrained model) r from it can differ from the task's own; on trained models it agrees."""
    lines = (run_dir / "test_predictions.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(x) for x in lines if x.strip()]
    x = np.asarray([float(r.get("score", r.get("label"))) for r in rows])
    y = np.asarray([float(r["predicted"]) for r in rows])
    return np.stack([x, y, x * y, x * x, y * y, np.ones_like(x)], axis=1)


def _pearson(s: np.ndarray) -> np.ndarray:
    """Pearson's r from summed ``[..., 6]`` moments (0 where a variance is 0)."""
    n = s[..., 5]
    cov = n * s[..., 2] - s[..., 0] * s[..., 1]
    var = (n * s[..., 3] - s[..., 0] ** 2) * (n * s[..., 4] - s[..., 1] ** 2)
    return np.divide(cov, np.sqrt(np.clip(var, 0, None)), out=np.zeros(n.shape), where=var > 0)


def _coref_stats(run_dir: Path, results: dict) -> np.ndarray | None:
    """``[D, 12]``: per test document the CoNLL F1's statistics
    (:func:`bertkit.metrics.coref.document_statistics`, singletons kept as the headline), gold
    clusters from the run's data set (``results["data"]``), predicted ones from
    ``test_predictions.conll``; documents in the gold split's order. None when the gold split
    cannot be read here (another machine's data root)."""
    from bertkit.bench.contamination import task_test_file
    from bertkit.data.conll2012 import read_conll2012
    from bertkit.errors import BertkitError
    from bertkit.metrics.coref import document_statistics

    test = task_test_file("coref", str(results["data"]))  # a file, or a folder of documents
    if test is None:
        return None
    files = sorted(f for f in test.iterdir() if f.is_file()) if test.is_dir() else [test]
    try:
        gold = [d for f in files for d in read_conll2012(f)]
        pred = {d.name: d.clusters or []
                for d in read_conll2012(run_dir / "test_predictions.conll")}
    except BertkitError:
        return None
    rows = [document_statistics(d.clusters or [], pred[d.name]) for d in gold if d.name in pred]
    if len(rows) != len(pred):  # a predicted document the gold split lacks
        return None
    return np.asarray(rows, dtype=float).reshape(-1, 12)


def _conll_score(s: np.ndarray) -> np.ndarray:
    """CoNLL F1 in points, the unit of the task's own ``conll_f1`` (its ``Metric.scale`` is 1)."""
    from bertkit.metrics.coref import conll_from_statistics

    return 100.0 * conll_from_statistics(s)


METRICS: dict[str, MetricSpec] = {m.name: m for m in (
    MetricSpec("entity_f1", "f1", ("ner",), "entity F1, strict IOB2 spans, micro over types "
               "(seqeval strict)", _entity_stats, _micro_score),
    MetricSpec("token_macro_f1", "token_macro_f1", ("ner",), "token-level macro-F1 over span "
               "types, O excluded (SciBERT's PICO metric)", _token_stats, _macro_score),
    MetricSpec("micro_f1", "micro_f1", ("re", "cls"), "micro-F1 over labels, the negative "
               "class excluded (BLURB's relation metric)",
               lambda d, r: _label_stats(d, r, True), _pooled),
    MetricSpec("macro_f1", "macro_f1", ("re", "cls"), "macro-F1, unweighted mean over labels "
               "present in gold or predictions (negative class excluded for relations)",
               lambda d, r: _label_stats(d, r, True), _macro_score),
    MetricSpec("accuracy", "accuracy", ("cls", "re"), "accuracy over all test items",
               _accuracy_stats, _ratio),
    MetricSpec("pearson", "pearson", ("sim",), "Pearson correlation of predicted and gold scores "
               "(BLURB's similarity metric)", _pearson_stats, _pearson),
    MetricSpec("hoc_f1", "hoc_f1", ("cls",), "BLURB's HoC score: micro-F1 over the document x "
               "hallmark indicators, as BLURB's code computes it", _hoc_stats, _micro_score),
    MetricSpec("las", "las", ("dep",), "labelled attachment score, punctuation excluded"),
    MetricSpec("uas", "uas", ("dep",), "unlabelled attachment score, punctuation excluded"),
    MetricSpec("squad_f1", "f1", ("qa",), "SQuAD token F1 (official scorer, points)"),
    MetricSpec("conll_f1", "conll_f1", ("coref",), "CoNLL F1: mean of MUC, B-cubed and CEAF-e F1 "
               "(reference scorer, points), singletons included as LitBank annotates them",
               _coref_stats, _conll_score),
)}
"""Every metric a suite may name."""


def task_scale(task: str, key: str) -> float:
    """The factor from a task's ``results.json`` value to points: the task's headline
    ``Metric.scale`` for ``key`` (1 for SQuAD scores, already in points), else 100."""
    from bertkit.tasks.registry import get_task

    try:
        for metric in get_task(task).headline:
            if metric.key == key:
                return float(getattr(metric, "scale", 100.0))
    except Exception:  # an unregistered task: the report says so elsewhere
        pass
    return 100.0
