"""Relation-classification scores with scikit-learn, every average named explicitly.

* ``micro_f1`` (with ``micro_precision``/``micro_recall``): pooled over the relation labels,
  **excluding** the declared negative label (``no_relation`` in TACRED, Zhang et al., 2017;
  ``false`` in BLURB's ChemProt, Gu et al., 2021). Predicting the negative label for a positive
  pair costs recall; predicting a relation for a negative pair costs precision. With no negative
  label (SciBERT's ChemProt release), micro-F1 equals accuracy, which is the figure SciBERT
  reports (83.64).
* ``macro_f1``: the unweighted mean of per-label F1 over the positive labels present in gold or
  predictions of the split (SciBERT's other tasks report macro-F1; the two are not comparable).
* ``accuracy``: over all pairs, the negative label included.
* ``per_label``: precision/recall/F1/support for every label, the negative one included.
* ``confusion``: rows = gold, columns = predicted, over ``labels``.

Labels seen only in the evaluated split (not in training) are scored like any other: the model
cannot predict them, so their recall is 0. ``baseline``: the constant majority-label prediction
scored the same way (:func:`bertkit.metrics.collapse.collapse_report`), for the collapse warning.
"""

from __future__ import annotations

from typing import Sequence

# the scorer and the confusion-matrix files are shared with every classification task
from bertkit.metrics.cls import confusion_csv, label_table, save_confusion  # noqa: F401
from bertkit.metrics.collapse import with_baseline

NEGATIVE_NAMES = ("no_relation", "no-relation", "norelation", "false", "none", "na", "other",
                  "negative")


def detect_negative(labels: Sequence[str]) -> str | None:
    """The negative label among ``labels`` (case-insensitive match on :data:`NEGATIVE_NAMES`), or None.

    >>> detect_negative(["INHIBITOR", "false"])
    'false'
    """
    found = [lab for lab in labels if lab.lower() in NEGATIVE_NAMES]
    return found[0] if len(found) == 1 else None


def relation_scores(gold: Sequence[str], pred: Sequence[str], negative_label: str | None = None,
                    labels: Sequence[str] = ()) -> dict:
    """:func:`_relation_scores` plus the majority-class ``baseline``, ``baseline_macro_f1`` and
    ``majority_share`` (:func:`bertkit.metrics.collapse.with_baseline`, scored with the same
    negative label).

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.
    """
    out = _relation_scores(gold, pred, negative_label, labels)
    return with_baseline(out, list(gold), list(pred),
                         lambda g, p: _relation_scores(g, p, negative_label, labels))


def _relation_scores(gold: Sequence[str], pred: Sequence[str], negative_label: str | None = None,
                     labels: Sequence[str] = ()) -> dict:
    """Scores of predicted relation labels against gold ones (see module docstring): the shared
    classification table (:func:`bertkit.metrics.cls.label_table`) with ``negative_label`` left
    out of the micro and macro averages.

    Args:
        gold, pred: one label per pair, equal lengths.
        negative_label: left out of the micro and macro averages (None: every label counts).
        labels: the model's labels; the union with those in ``gold`` and ``pred`` is reported.

    Returns:
        ``micro_precision``, ``micro_recall``, ``micro_f1``, ``macro_f1``, ``accuracy`` (in [0, 1]),
        ``negative_label``, ``labels`` (sorted), ``per_label`` ``{label: {precision, recall, f1,
        support}}``, ``confusion`` (``[L][L]`` ints, rows gold), ``support`` (pairs scored).

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.
    """
    table = label_table(gold, pred, labels, negative_label)
    return {**{k: table[k] for k in ("micro_precision", "micro_recall", "micro_f1", "macro_f1",
                                     "accuracy")},
            "negative_label": negative_label,
            **{k: table[k] for k in ("labels", "per_label", "confusion", "support")}}
