"""Similarity (regression) scores: Pearson r, Spearman rho, mean squared error.

BLURB scores BIOSSES by Pearson r between the predicted and the gold scores (Gu et al., 2021,
§3.4; BLUE, Peng et al., 2019, scores it the same way); Spearman rho is what SentEval and the STS
literature add. Both come from ``scipy.stats``; a constant prediction (or constant gold) has no
correlation: it scores 0 and is flagged ``constant``, so a collapsed regressor never reads as a
number scipy would give as NaN.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def similarity_scores(gold: Sequence[float], pred: Sequence[float]) -> dict:
    """Pearson r and Spearman rho (in [-1, 1]) and the MSE (in the scores' units squared).

    Args:
        gold, pred: one score per pair, equal lengths.

    Returns:
        ``pearson``, ``spearman``, ``mse``, ``support`` (pairs), ``constant`` (True when the
        predictions or the gold scores do not vary: the correlations are then 0), and
        ``baseline_mse`` (predicting the gold mean for every pair: what a collapsed model gets).

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.

    >>> s = similarity_scores([0.0, 1.0, 2.0, 4.0], [0.5, 1.0, 2.5, 3.0])
    >>> round(s["pearson"], 4), s["spearman"], s["mse"]
    (0.9429, 1.0, 0.375)
    >>> similarity_scores([1.0, 2.0], [3.0, 3.0])["constant"]
    True
    """
    from scipy.stats import pearsonr, spearmanr

    g = np.asarray(gold, dtype=np.float64)
    p = np.asarray(pred, dtype=np.float64)
    if g.shape != p.shape:
        raise ValueError("one prediction per gold score is needed")
    out = {"pearson": 0.0, "spearman": 0.0, "mse": 0.0, "support": int(g.size),
           "constant": True, "baseline_mse": 0.0}
    if g.size == 0:
        return out
    out["mse"] = float(np.mean((g - p) ** 2))
    out["baseline_mse"] = float(np.mean((g - g.mean()) ** 2))
    if g.size >= 2 and np.ptp(g) > 0 and np.ptp(p) > 0:
        out.update(pearson=float(pearsonr(g, p)[0]), spearman=float(spearmanr(g, p)[0]),
                   constant=False)
    return out
