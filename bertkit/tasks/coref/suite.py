"""What ``bertkit bench`` needs to enter coreference in a suite
(:class:`~bertkit.tasks.base.SuiteSpec`): the CoNLL F1 (mean of MUC, B-cubed and CEAF-e F1,
the reference scorer's, in points; Pradhan et al. 2014) with its per-document statistics; the
test sentences of a split's documents; the family (SpanBERT, Joshi et al. 2020, section 4.3).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertkit.data.conll2012 import read_conll2012
from bertkit.errors import BertkitError
from bertkit.metrics.coref import conll_from_statistics, document_statistics
from bertkit.tasks.base import SuiteMetric, SuiteSpec
from bertkit.tasks.coref.data import resolve_coref, split_files


def conll_stats(run_dir: Path, results: dict) -> np.ndarray | None:
    """``[D, 12]``: per test document the CoNLL F1's statistics
    (:func:`bertkit.metrics.coref.document_statistics`, singletons kept as the headline), gold
    clusters from the run's data set (``results["data"]``, the task's resolver), predicted ones
    from ``test_predictions.conll``; documents in the gold split's order. None when the gold
    split cannot be read here (another machine's data root) or a predicted document is not in
    it."""
    try:
        gold = [d for f in split_files(resolve_coref(str(results["data"]), ("test",))["test"])
                for d in read_conll2012(f)]
        pred = {d.name: d.clusters or []
                for d in read_conll2012(run_dir / "test_predictions.conll")}
    except BertkitError:
        return None
    rows = [document_statistics(d.clusters or [], pred[d.name]) for d in gold if d.name in pred]
    if len(rows) != len(pred):  # a predicted document the gold split lacks
        return None
    return np.asarray(rows, dtype=float).reshape(-1, 12)


def conll_score(s: np.ndarray) -> np.ndarray:
    """CoNLL F1 in points from summed ``[..., 12]``, the unit of the task's own ``conll_f1``."""
    return 100.0 * conll_from_statistics(s)


def sentence_texts(path: Path) -> list[str]:
    """The sentences of a test split's documents (a CoNLL-2012 file or a folder of them, the
    task's reader), words joined by spaces.

    Raises:
        BertkitError: a folder without CoNLL-2012 files, or a file the reader refuses.
    """
    return [" ".join(s) for f in split_files(path) for d in read_conll2012(f, labelled=False)
            for s in d.sentences]


SUITE = SuiteSpec(
    metrics=(SuiteMetric("conll_f1", "conll_f1", "CoNLL F1: mean of MUC, B-cubed and CEAF-e "
                         "F1 (reference scorer, points), singletons included as LitBank "
                         "annotates them", scale=1.0, stats=conll_stats, score=conll_score),),
    families={"coref": "coreference resolution (SpanBERT)"},
    test_texts=sentence_texts)
"""Coreference's suite declaration (``CorefTask.suite``)."""
