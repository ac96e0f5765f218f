"""Classification scores with scikit-learn and the confusion-matrix files.

Single-label (:func:`label_scores`), the figures SciBERT reports for SciCite, ACL-ARC and Paper
Field (Beltagy et al., 2019, Table 1: macro-F1):

* ``macro_f1``: unweighted mean of per-label F1 over the labels present in gold or predictions.
* ``micro_f1``: pooled over every label; for single-label data it equals ``accuracy``.
* ``per_label`` (precision/recall/F1/support) and ``confusion`` (rows gold, columns predicted).

Multi-label (:func:`multilabel_scores`): each example has a set of labels; ``macro_f1`` and
``micro_f1`` over the label indicator matrix, ``accuracy`` = exact-set (subset) accuracy.

Every scorer here includes the collapse check (:mod:`bertkit.metrics.collapse`) as ``baseline``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Sequence

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

from bertkit.metrics.collapse import with_baseline


def label_scores(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str] = ()) -> dict:
    """Single-label scores of predicted labels against gold ones, with the majority baseline.

    As :func:`_label_scores`, plus ``baseline``, ``baseline_macro_f1`` and ``majority_share``
    (:func:`with_baseline`).

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.

    >>> round(label_scores(["a", "a", "b"], ["a", "b", "b"])["macro_f1"], 4)
    0.6667
    """
    out = _label_scores(gold, pred, labels)
    return with_baseline(out, list(gold), list(pred), lambda g, p: _label_scores(g, p, labels))


def _label_scores(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str] = ()) -> dict:
    """Single-label scores of predicted labels against gold ones (see module docstring).

    Args:
        gold, pred: one label per example, equal lengths.
        labels: the model's labels; the union with those in ``gold`` and ``pred`` is reported.

    Returns:
        ``macro_f1``, ``micro_f1``, ``accuracy`` (in [0, 1]), ``labels`` (sorted), ``per_label``
        ``{label: {precision, recall, f1, support}}``, ``confusion`` (``[L][L]`` ints, rows
        gold), ``support`` (examples scored).

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.
    """
    out = label_table(gold, pred, labels)
    return {key: out[key] for key in ("macro_f1", "micro_f1", "accuracy", "labels", "per_label",
                                      "confusion", "support")}


def label_table(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str] = (),
                negative_label: str | None = None) -> dict:
    """The per-label precision/recall/F1 table, micro and macro averages, accuracy and confusion
    matrix of single-label predictions: the one scorer of :func:`label_scores` (cls) and
    :func:`bertkit.metrics.re.relation_scores` (RE, with its negative label).

    Args:
        gold, pred: one label per example, equal lengths.
        labels: the model's labels; the union with those in ``gold`` and ``pred`` is reported.
        negative_label: left out of the micro and macro averages (the "no relation" label of
            relation data, Zhang et al. 2017); None: every label counts.

    Returns:
        ``micro_precision``, ``micro_recall``, ``micro_f1`` (pooled over every label but
        ``negative_label``; 0 when no other label exists), ``macro_f1`` (unweighted mean F1 over
        the labels but ``negative_label`` present in gold or predictions), ``accuracy`` (every
        example), all in [0, 1]; ``labels`` (sorted), ``per_label`` ``{label: {precision,
        recall, f1, support}}`` (every label), ``confusion`` (``[L][L]`` ints, rows gold,
        columns predicted, over ``labels``), ``support`` (examples scored).

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.

    >>> t = label_table(["a", "n", "b"], ["a", "a", "n"], negative_label="n")
    >>> round(t["micro_precision"], 2), round(t["micro_recall"], 2), t["accuracy"] > 0.33
    (0.5, 0.5, True)
    """
    gold, pred = list(gold), list(pred)
    if len(gold) != len(pred):
        raise ValueError("one prediction per gold label is needed")
    every = sorted(set(labels) | set(gold) | set(pred))
    counted = [lab for lab in every if lab != negative_label]
    present = sorted((set(gold) | set(pred)) - {negative_label})
    out = {"micro_precision": 0.0, "micro_recall": 0.0, "micro_f1": 0.0, "macro_f1": 0.0,
           "accuracy": 0.0, "labels": every, "per_label": {},
           "confusion": [[0] * len(every) for _ in every], "support": len(gold)}
    if not gold:
        return out
    if counted:
        p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=counted, average="micro",
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
    out["confusion"] = ([[len(gold)]] if len(every) == 1  # scikit-learn warns on one label
                        else confusion_matrix(gold, pred, labels=every).tolist())
    return out


def _indicator(sets: Sequence[Sequence[str]], labels: Sequence[str]) -> np.ndarray:
    index = {lab: i for i, lab in enumerate(labels)}
    m = np.zeros((len(sets), len(labels)), dtype=np.int64)
    for row, labs in enumerate(sets):
        for lab in labs:
            m[row, index[lab]] = 1
    return m


def multilabel_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
                      labels: Sequence[str] = ()) -> dict:
    """Multi-label scores (:func:`_multilabel_scores`) with two constant baselines: the
    majority label set (:func:`with_baseline`; label sets compared as sorted tuples) and every
    label for every example (``baseline["every_label_macro_f1"]``, ``["every_label_micro_f1"]``:
    the collapse a multi-label model falls into first, e.g. HoC's 23.1 micro-F1; on one row per
    document its micro-F1 is BLURB's HoC score). A model at or below either is warned about.

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.
    """
    out = _multilabel_scores(gold, pred, labels)
    g = [tuple(sorted(set(x))) for x in gold]
    p = [tuple(sorted(set(x))) for x in pred]
    return with_baseline(out, g, p, lambda a, b: _multilabel_scores(a, b, labels),
                         every_label=tuple(out["labels"]))


def _multilabel_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
                       labels: Sequence[str] = ()) -> dict:
    """Multi-label scores: each example has a (possibly empty) set of labels.

    Args:
        gold, pred: one label list per example, equal lengths.
        labels: the model's labels; the union with those used in ``gold``/``pred`` is reported.

    Returns:
        ``macro_f1`` (mean per-label F1 over labels present in gold or predictions), ``micro_f1``
        (pooled over all label decisions), ``accuracy`` (exact label set), ``labels``,
        ``per_label``, ``support`` (examples); ``confusion`` is None (no single-label matrix).

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.
    """
    gold, pred = [sorted(set(g)) for g in gold], [sorted(set(p)) for p in pred]
    if len(gold) != len(pred):
        raise ValueError("one prediction per gold label set is needed")
    every = sorted(set(labels) | {lab for g in gold for lab in g} | {lab for p in pred for lab in p})
    out = {"macro_f1": 0.0, "micro_f1": 0.0, "accuracy": 0.0, "labels": every, "per_label": {},
           "confusion": None, "support": len(gold)}
    if not gold or not every:
        return out
    g, p = _indicator(gold, every), _indicator(pred, every)
    present = [i for i in range(len(every)) if g[:, i].any() or p[:, i].any()]
    if present:
        out["macro_f1"] = float(precision_recall_fscore_support(
            g[:, present], p[:, present], average="macro", zero_division=0)[2])
    out["micro_f1"] = float(precision_recall_fscore_support(g, p, average="micro",
                                                            zero_division=0)[2])
    out["accuracy"] = float((g == p).all(axis=1).mean())
    pr, rc, f, s = precision_recall_fscore_support(g, p, average=None, zero_division=0)
    out["per_label"] = {lab: {"precision": float(pr[i]), "recall": float(rc[i]),
                              "f1": float(f[i]), "support": int(s[i])}
                        for i, lab in enumerate(every)}
    return out


def hoc_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
           ids: Sequence[str] | None = None, labels: Sequence[str] = ()) -> dict:
    """BLURB's HoC score: micro-F1 over the document-by-hallmark indicator matrix.

    As BLURB's evaluation code computes it (Gu et al., 2021, Table 6 "HoC ... average micro F1";
    the BLURB authors' code as released with LinkBERT, michiyasunaga/LinkBERT
    ``src/seqcls/utils_hoc.py``, ``eval_hoc`` and ``compute_p_r_f``): the rows are grouped into
    documents by the part of their id before the first ``_`` (BLURB's rows are sentences
    ``PMID_n``; ours are whole abstracts, one row each), a document's gold and predicted label
    sets are the unions of its rows', and over the ``[documents, labels]`` 0/1 matrices
    ``TP = sum(pred == gold == 1)``, ``P = TP / sum(pred)``, ``R = TP / sum(gold)``,
    ``F1 = 2PR / (P + R)`` (0 where a denominator is 0). On one row per document this equals
    scikit-learn's micro-F1 of the indicator matrix; documents with no hallmark count through
    their false positives only. (BLUE's older ``eval_hoc.py`` averages per-document precision
    and recall instead: another number, not BLURB's.)

    Args:
        gold, pred: one label list per row, equal lengths.
        ids: one id per row (None: each row its own document).
        labels: the model's labels (the union with those used is the label axis).

    Returns:
        ``hoc_f1``, ``hoc_precision``, ``hoc_recall`` in [0, 1] and ``hoc_documents``.

    Raises:
        ValueError: ``gold``, ``pred`` (and ``ids``) differ in length.

    >>> r = hoc_f1([["a"], ["a"], [], ["b"]], [["a"], ["b"], ["b"], ["b"]], ["1_0", "1_1", "2", "3"])
    >>> r["hoc_documents"], round(r["hoc_precision"], 4), round(r["hoc_recall"], 4)
    (3, 0.5, 1.0)
    """
    if len(gold) != len(pred) or (ids is not None and len(ids) != len(gold)):
        raise ValueError("one prediction (and one id) per gold label set is needed")
    keys = [str(i).split("_")[0] for i in ids] if ids is not None else list(range(len(gold)))
    docs: dict = {}
    for key, g, p in zip(keys, gold, pred):
        entry = docs.setdefault(key, (set(), set()))
        entry[0].update(g)
        entry[1].update(p)
    every = sorted(set(labels) | {lab for g, p in docs.values() for lab in g | p})
    gm = _indicator([sorted(g) for g, _ in docs.values()], every)  # [D, L]
    pm = _indicator([sorted(p) for _, p in docs.values()], every)  # [D, L]
    tp = int(((gm == pm) & (pm != 0)).sum())
    precision = tp / int(pm.sum()) if pm.sum() else 0.0
    recall = tp / int(gm.sum()) if gm.sum() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"hoc_f1": f1, "hoc_precision": precision, "hoc_recall": recall,
            "hoc_documents": len(docs)}


def best_thresholds(probs: np.ndarray, gold: np.ndarray,
                    grid: Sequence[float] = tuple(np.round(np.arange(0.05, 0.96, 0.05), 2))
                    ) -> np.ndarray:
    """Per-label decision thresholds that maximise each label's F1 on held-out data.

    Args:
        probs: ``[N, C]`` float, sigmoid probabilities.
        gold: ``[N, C]`` 0/1 indicators.
        grid: candidate thresholds in (0, 1); ties go to the one closest to 0.5.

    Returns:
        ``[C]`` float thresholds (0.5 for a label with no positive gold example).
    """
    probs, gold = np.asarray(probs, dtype=np.float64), np.asarray(gold).astype(bool)
    out = np.full(probs.shape[1], 0.5)
    order = sorted(grid, key=lambda t: abs(t - 0.5))
    for c in range(probs.shape[1]):
        if not gold[:, c].any():
            continue
        best, best_f = 0.5, -1.0
        for t in order:
            p = probs[:, c] >= t
            tp = float((p & gold[:, c]).sum())
            f = 2 * tp / max(float(p.sum() + gold[:, c].sum()), 1e-9)
            if f > best_f + 1e-12:
                best, best_f = t, f
        out[c] = best
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

    Labels and title are drawn as written (``parse_math=False``): a label such as ``$x$`` or
    ``$\\frac$`` is text, not mathtext.

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
        # drawn as written: no mathtext ($...$) in label names or the title
        ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7,
                      parse_math=False)
        ax.set_yticks(range(len(labels)), labels, fontsize=7, parse_math=False)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        if title:
            ax.set_title(title, fontsize=9, parse_math=False)
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
