"""Similarity (regression) scores: Pearson r, Spearman rho, mean squared error.

BLURB scores BIOSSES by Pearson r between the predicted and the gold scores (Gu et al., 2021,
§3.4; BLUE, Peng et al., 2019, scores it the same way); Spearman rho is what SentEval and the STS
literature add. Both come from ``scipy.stats``. Where scipy would give NaN:

* every prediction the same (the gold varies): the correlations are 0, a constant prediction's
  level, and the split is flagged ``constant``, so a collapsed regressor reads as failed, never
  as a number;
* every gold score the same: nothing can be correlated with the gold, whatever the model does,
  so the correlations are undefined: None (JSON null), never 0, flagged ``constant_gold`` with
  a message naming the side (``undefined``) (sentence-transformers#2702; mteb PR #33). A dev
  split like that chooses no epoch (:func:`bertkit.training.loop.evaluate_and_select`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def similarity_scores(gold: Sequence[float], pred: Sequence[float]) -> dict:
    """Pearson r and Spearman rho (in [-1, 1]) and the MSE (in the scores' units squared).

    Args:
        gold, pred: one score per pair, equal lengths.

    Returns:
        ``pearson``, ``spearman`` (None where undefined: fewer than two pairs or every gold
        score the same), ``mse``, ``support`` (pairs), ``constant`` (True when the predictions
        do not vary: the correlations are then 0, or None with constant gold),
        ``constant_gold`` (True when the gold scores do not vary), ``undefined`` (why the
        correlations are None, naming the constant side; absent when they are defined) and
        ``baseline_mse`` (predicting the gold mean for every pair: what a collapsed model gets).

    Raises:
        ValueError: ``gold`` and ``pred`` differ in length.

    >>> s = similarity_scores([0.0, 1.0, 2.0, 4.0], [0.5, 1.0, 2.5, 3.0])
    >>> round(s["pearson"], 4), s["spearman"], s["mse"]
    (0.9429, 1.0, 0.375)
    >>> similarity_scores([1.0, 2.0], [3.0, 3.0])["pearson"]
    0.0
    >>> similarity_scores([2.0, 2.0], [1.0, 3.0])["undefined"]
    'every gold score is the same (2): no correlation is defined (the predictions vary)'
    """
    from scipy.stats import pearsonr, spearmanr

    g = np.asarray(gold, dtype=np.float64)
    p = np.asarray(pred, dtype=np.float64)
    if g.shape != p.shape:
        raise ValueError("one prediction per gold score is needed")
    out = {"pearson": None, "spearman": None, "mse": 0.0, "support": int(g.size),
           "constant": True, "constant_gold": True, "baseline_mse": 0.0}
    if g.size == 0:
        out["undefined"] = "no pair scored: no correlation is defined"
        return out
    out["mse"] = float(np.mean((g - p) ** 2))
    out["baseline_mse"] = float(np.mean((g - g.mean()) ** 2))
    out["constant"] = bool(np.ptp(p) == 0)
    out["constant_gold"] = bool(np.ptp(g) == 0)
    if g.size < 2:
        out["undefined"] = "one pair: no correlation is defined"
    elif out["constant_gold"]:
        side = "every prediction the same too" if out["constant"] else "the predictions vary"
        out["undefined"] = (f"every gold score is the same ({g[0]:g}): no correlation is "
                            f"defined ({side})")
    elif out["constant"]:  # a constant prediction's level
        out.update(pearson=0.0, spearman=0.0)
    else:
        out.update(pearson=float(pearsonr(g, p)[0]), spearman=float(spearmanr(g, p)[0]))
    return out
