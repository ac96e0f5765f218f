"""Per-test-item sufficient statistics and the scores of their sums, for the paired bootstrap.

A task's suite metric (:class:`bertkit.tasks.base.SuiteMetric`) turns a run's predictions into
an array ``[N, K]``: K counts or moments per test item (sentence, pair, document). Summed over
any resample of the items they give the metric of that resample, so the paired bootstrap
(:func:`bertkit.bench.stats.paired_bootstrap`; Koehn 2004, Berg-Kirkpatrick et al. 2012) costs
one matrix product per resample. The scores here take ``[..., K]`` sums and return ``[...]``.

Averaging, as the papers define it: micro-F1 pools the counts (BLURB's relation and HoC
metrics); macro-F1 is the unweighted mean over the labels present in gold or predictions
(scikit-learn, as SciBERT on ACL-ARC and SciCite); Pearson's r from the summed moments (BLURB on
BIOSSES).
"""

from __future__ import annotations

import numpy as np


def f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """F1 = 2TP / (2TP + FP + FN), 0 where the denominator is 0 (same shapes in and out).

    >>> float(f1(np.array(2.0), np.array(1.0), np.array(1.0)))
    0.6666666666666666
    """
    den = 2 * tp + fp + fn
    return np.divide(2 * tp, den, out=np.zeros_like(den, dtype=float), where=den > 0)


def micro_f1(s: np.ndarray) -> np.ndarray:
    """F1 of summed ``[..., 3]`` TP, FP, FN counts."""
    return f1(s[..., 0], s[..., 1], s[..., 2])


def per_label(pairs: list[tuple[list[str], list[str]]], labels: list[str]) -> np.ndarray:
    """``[N, 3 L]``: per item (a ``(gold units, predicted units)`` pair of equal-length lists)
    and label, TP, FP, FN of its units; units whose label is not in ``labels`` count nowhere."""
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


def macro_f1(s: np.ndarray) -> np.ndarray:
    """Mean F1 over the labels present (in gold or predictions) of summed ``[..., 3 L]``."""
    s = s.reshape(*s.shape[:-1], -1, 3)
    scores = f1(s[..., 0], s[..., 1], s[..., 2])
    present = s.sum(axis=-1) > 0
    n = present.sum(axis=-1)
    return np.divide((scores * present).sum(axis=-1), n, out=np.zeros(scores.shape[:-1]),
                     where=n > 0)


def pooled_f1(s: np.ndarray) -> np.ndarray:
    """Micro-F1 of summed per-label ``[..., 3 L]`` statistics (all labels pooled)."""
    s = s.reshape(*s.shape[:-1], -1, 3).sum(axis=-2)
    return f1(s[..., 0], s[..., 1], s[..., 2])


def ratio(s: np.ndarray) -> np.ndarray:
    """``s[..., 0] / s[..., 1]`` of summed ``[..., 2]`` (hits, items): accuracy; 0 over 0 items."""
    return np.divide(s[..., 0], s[..., 1], out=np.zeros(s.shape[:-1]), where=s[..., 1] > 0)


def moments(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``[N, 6]``: x, y, xy, x², y², 1 of each of N ``(gold, predicted)`` values."""
    return np.stack([x, y, x * y, x * x, y * y, np.ones_like(x)], axis=1)


def pearson(s: np.ndarray) -> np.ndarray:
    """Pearson's r from summed ``[..., 6]`` :func:`moments` (0 where a variance is 0)."""
    n = s[..., 5]
    cov = n * s[..., 2] - s[..., 0] * s[..., 1]
    var = (n * s[..., 3] - s[..., 0] ** 2) * (n * s[..., 4] - s[..., 1] ** 2)
    return np.divide(cov, np.sqrt(np.clip(var, 0, None)), out=np.zeros(n.shape), where=var > 0)
