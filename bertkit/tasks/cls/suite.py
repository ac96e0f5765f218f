"""What ``bertkit bench`` needs to enter text classification in a suite
(:class:`~bertkit.tasks.base.SuiteSpec`): macro-F1 (SciBERT on ACL-ARC and SciCite), micro-F1 and
accuracy (BLURB on PubMedQA) per test text (:mod:`bertkit.tasks.suite_metrics`), and BLURB's HoC
score per abstract; the test texts, each distinct one once; the families.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertkit.metrics.items import micro_f1
from bertkit.tasks.base import SuiteMetric, SuiteSpec
from bertkit.tasks.cls.data import read_examples
from bertkit.tasks.suite_metrics import ACCURACY, MACRO_F1, MICRO_F1, figure, prediction_rows

NEAR_EVERY_LABEL = 0.9  # hoc recall at or above this with precision under 0.5: (nearly) every
# label for every document (lite HoC seeds: recall 0.95-1.00 at precision 0.13)


def hoc_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 3]``: per abstract, TP, FP, FN of its hallmark indicators (gold ``label`` and
    ``predicted`` label lists; ``null``: none predicted). Pooled, F1 = 2TP / (2TP + FP + FN) is
    BLURB's HoC score on one row per document (the task's ``hoc_f1``, issue 42)."""
    rows = []
    for r in prediction_rows(run_dir):
        gold, pred = set(r.get("label") or []), set(r.get("predicted") or [])
        rows.append((len(gold & pred), len(pred - gold), len(gold - pred)))
    return np.asarray(rows, dtype=float).reshape(-1, 3)


def hoc_floor(test: dict) -> str | None:
    """HoC recall at least :data:`NEAR_EVERY_LABEL` at precision under 0.5: (nearly) every
    label for every document (lite HoC seeds: 23.1 hoc_f1), or None."""
    recall, precision = figure(test, "hoc_recall"), figure(test, "hoc_precision")
    if recall is not None and precision is not None \
            and recall >= NEAR_EVERY_LABEL and precision < 0.5:
        return (f"(nearly) every label for every document (hoc recall {recall:.2f}, precision "
                f"{precision:.2f})")
    return None


def texts(path: Path) -> list[str]:
    """The test file's texts and second texts (the task's reader, JSON lines or CSV/TSV with a
    header), one a text.

    Raises:
        BertkitError: a file the reader refuses (file and line named).
    """
    examples = read_examples(path, labelled=False).examples
    return [t for x in examples for t in (x.text, x.text_pair) if isinstance(t, str)]


SUITE = SuiteSpec(
    metrics=(MICRO_F1, MACRO_F1, ACCURACY,
             SuiteMetric("hoc_f1", "hoc_f1", "BLURB's HoC score: micro-F1 over the document x "
                         "hallmark indicators, as BLURB's code computes it", stats=hoc_stats,
                         score=micro_f1, floor=hoc_floor)),
    families={"doc-cls": "document classification (BLURB)",
              "qa": "question answering (BLURB)",
              "cls": "text classification (SciBERT)"},
    test_texts=texts, distinct_texts=True)
"""Text classification's suite declaration (``CLSTask.suite``)."""
