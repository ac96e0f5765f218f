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
cannot predict them, so their recall is 0.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Sequence

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

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
    """Scores of predicted relation labels against gold ones (see module docstring).

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
    gold, pred = list(gold), list(pred)
    if len(gold) != len(pred):
        raise ValueError("one prediction per gold label is needed")
    every = sorted(set(labels) | set(gold) | set(pred))
    positive = [lab for lab in every if lab != negative_label]
    present = sorted((set(gold) | set(pred)) - {negative_label})
    out = {"micro_precision": 0.0, "micro_recall": 0.0, "micro_f1": 0.0, "macro_f1": 0.0,
           "accuracy": 0.0, "negative_label": negative_label, "labels": every, "per_label": {},
           "confusion": [[0] * len(every) for _ in every], "support": len(gold)}
    if not gold:
        return out
    if positive:
        p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=positive, average="micro",
                                                     zero_division=0)
        out.update(micro_precision=float(p), micro_recall=float(r), micro_f1=float(f))
    if present:
        out["macro_f1"] = float(precision_recall_fscore_support(
            gold, pred, labels=present, average="macro", zero_division=0)[2])
    out["accuracy"] = float(accuracy_score(gold, pred))
    p, r, f, s = precision_recall_fscore_support(gold, pred, labels=every, average=None,
                                                 zero_division=0)
    out["per_label"] = {lab: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]),
                              "support": int(s[i])} for i, lab in enumerate(every)}
    out["confusion"] = confusion_matrix(gold, pred, labels=every).tolist()
    return out


def confusion_csv(labels: Sequence[str], matrix: Sequence[Sequence[int]]) -> str:
    """The confusion matrix as CSV: header ``gold\\predicted, <labels>``, one row per gold label."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["gold\\predicted", *labels])
    for lab, row in zip(labels, matrix):
        writer.writerow([lab, *row])
    return buf.getvalue()


def save_confusion(stem: str | Path, labels: Sequence[str], matrix: Sequence[Sequence[int]],
                   title: str = "") -> tuple[Path, Path]:
    """Write ``<stem>.csv`` and ``<stem>.png`` (matplotlib, Agg backend), both atomically.

    Returns:
        the CSV and PNG paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bertkit.io import atomic_path, write_text

    stem = Path(stem)
    csv_path, png_path = stem.with_suffix(".csv"), stem.with_suffix(".png")
    write_text(csv_path, confusion_csv(labels, matrix))
    m = np.asarray(matrix, dtype=np.int64).reshape(len(labels), len(labels))
    size = max(4.0, 0.45 * len(labels) + 2)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    try:
        im = ax.imshow(m, cmap="Blues")
        ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        if title:
            ax.set_title(title, fontsize=9)
        high = m.max() if m.size else 0
        for (i, j), v in np.ndenumerate(m):
            if v:
                ax.text(j, i, str(v), ha="center", va="center", fontsize=6,
                        color="white" if v > high / 2 else "black")
        fig.colorbar(im, ax=ax, fraction=0.046)
        fig.tight_layout()
        with atomic_path(png_path) as tmp:
            fig.savefig(tmp, format="png", dpi=120)
    finally:
        plt.close(fig)
    return csv_path, png_path
