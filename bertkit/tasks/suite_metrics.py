"""Suite metrics shared by the tasks that write one labelled prediction a line (relation
extraction and text classification): micro-F1 without the negative class, macro-F1 and accuracy,
their per-test-item statistics (:mod:`bertkit.metrics.items`) and their constant-prediction
floors; and the small readers of ``test_predictions.jsonl`` and of a run's test figures that
every task's :class:`~bertkit.tasks.base.SuiteSpec` uses.

Averaging, as the papers define it: relation micro-F1 pools the relation labels without the
negative class (BLURB on ChemProt and DDI, Gu et al. 2021); macro-F1 is the unweighted mean over
labels present in gold or predictions (scikit-learn, as SciBERT on ACL-ARC and SciCite, Beltagy
et al. 2019).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bertkit.metrics.items import macro_f1, per_label, pooled_f1, ratio
from bertkit.tasks.base import SuiteMetric

TOLERANCE = 1e-9
"""A score within this of a constant prediction's is at its level."""


def figure(test: dict, key: str) -> float | None:
    """The number ``test[key]`` (a run's test figures), None where it is absent or no number.

    >>> figure({"accuracy": 0.5, "constant": True}, "accuracy"), figure({"x": True}, "x")
    (0.5, None)
    """
    v = test.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def prediction_rows(run_dir: Path) -> list[dict]:
    """The objects of a run's ``test_predictions.jsonl``, one a non-blank line.

    Raises:
        OSError: no such file; ValueError: a line that is not JSON.
    """
    lines = (run_dir / "test_predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def label_pairs(run_dir: Path) -> list[tuple[str, str]]:
    """``(gold, predicted)`` per line of ``test_predictions.jsonl`` (``label``, ``predicted``)."""
    return [(str(r["label"]), str(r["predicted"])) for r in prediction_rows(run_dir)]


def label_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 3 L]``: per test item and label, TP, FP, FN; the run's ``negative_label``
    (``results.json``, relation extraction) is no label."""
    pairs = label_pairs(run_dir)
    labels = sorted({x for pair in pairs for x in pair} - {results.get("negative_label")})
    return per_label([([g], [p]) for g, p in pairs], labels)


def accuracy_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 2]``: per test item, 1 if predicted right, and 1 (the item)."""
    return np.asarray([(float(g == p), 1.0) for g, p in label_pairs(run_dir)]).reshape(-1, 2)


def at_or_below(test: dict, key: str, baseline: str, phrase: str) -> str | None:
    """``phrase`` with the two figures in points (``{score}``, ``{base}``) where ``test[key]``
    is at or below ``test[baseline]`` (a constant prediction's score), else None."""
    score, base = figure(test, key), figure(test, baseline)
    if score is not None and base is not None and score <= base + TOLERANCE:
        return phrase.format(score=100 * score, base=100 * base)
    return None


def accuracy_floor(test: dict) -> str | None:
    """Accuracy at or below the majority class's share (``majority_share``), or None."""
    return at_or_below(test, "accuracy", "majority_share", "accuracy at or below the majority "
                       "class's share (accuracy {score:.2f}, share {base:.2f})")


def macro_floor(test: dict) -> str | None:
    """Macro-F1 at or below always predicting the majority class (``baseline_macro_f1``)."""
    return at_or_below(test, "macro_f1", "baseline_macro_f1", "macro-F1 at or below always "
                       "predicting the majority class (macro-F1 {score:.2f}, the majority "
                       "class's {base:.2f})")


def micro_floor(test: dict) -> str | None:
    """Micro-F1 (the negative class not scored) of 0: what always predicting the negative class
    gets."""
    micro = figure(test, "micro_f1")
    if micro is not None and micro <= TOLERANCE:
        return "no relation found, as always predicting the negative class (micro-F1 0.00)"
    return None


MICRO_F1 = SuiteMetric(
    "micro_f1", "micro_f1", "micro-F1 over labels, the negative class excluded (BLURB's "
    "relation metric)", stats=label_stats, score=pooled_f1, floor=micro_floor)
MACRO_F1 = SuiteMetric(
    "macro_f1", "macro_f1", "macro-F1, unweighted mean over labels present in gold or "
    "predictions (negative class excluded for relations)", stats=label_stats, score=macro_f1,
    floor=macro_floor)
ACCURACY = SuiteMetric("accuracy", "accuracy", "accuracy over all test items",
                       stats=accuracy_stats, score=ratio, floor=accuracy_floor)
