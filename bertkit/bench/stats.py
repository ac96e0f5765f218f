"""Scores over seeds, the suite score, and the two significance tests the report runs.

* :func:`summary`: mean, sample standard deviation and n of a task's seed scores.
* :func:`suite_score`: BLURB's macro average, the mean of the family means (Gu et al. 2021, §3:
  "the BLURB score is the macro average of the average scores of each task type").
* :func:`aso`: almost stochastic order over seed scores (Dror, Shlomov & Reichart 2019;
  del Barrio et al. 2018), through ``deepsig`` (Ulmer et al. 2022). ``eps_min`` is the share of
  the score distributions where A is worse than B: below :data:`ASO_THRESHOLD` A is almost
  stochastically larger.
* :func:`paired_bootstrap`: resample test items with replacement, the same items for both sides
  (Koehn 2004; Berg-Kirkpatrick et al. 2012), each side's score the mean over its seeds.
* :func:`verdict`: "none" when the difference lies inside the seed spread (the larger of the two
  standard deviations), whatever the tests say: a gain inside the seed spread is not a gain.
"""

from __future__ import annotations

import math
import statistics
from typing import Callable, Sequence

import numpy as np

ASO_THRESHOLD = 0.2
"""eps_min below which A is called better (Ulmer et al. 2022's recommended tau)."""

BOOTSTRAP_SAMPLES = 1000


def summary(values: Sequence[float]) -> dict:
    """``{"mean", "sd", "n"}`` of ``values`` (sample sd; 0.0 for one value).

    >>> summary([1.0, 2.0, 3.0])
    {'mean': 2.0, 'sd': 1.0, 'n': 3}
    """
    values = [float(v) for v in values]
    if not values:
        return {"mean": float("nan"), "sd": float("nan"), "n": 0}
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "sd": sd, "n": len(values)}


def family_means(task_scores: dict[str, float], families: dict[str, str]) -> dict[str, float]:
    """``{family: mean of its tasks' scores}`` over the tasks that have a score.

    Args:
        task_scores: ``{task: score}`` (points; a task without a score is left out).
        families: ``{task: family}``.
    """
    grouped: dict[str, list[float]] = {}
    for task, score in task_scores.items():
        if score is not None and not math.isnan(score):
            grouped.setdefault(families[task], []).append(score)
    return {f: statistics.fmean(v) for f, v in grouped.items()}


def suite_score(task_scores: dict[str, float], families: dict[str, str]) -> float:
    """BLURB's score: the mean over families of the mean of each family's tasks.

    >>> round(suite_score({"a": 90.0, "b": 80.0, "c": 70.0}, {"a": "ner", "b": "ner", "c": "re"}), 2)
    77.5
    """
    means = family_means(task_scores, families)
    return statistics.fmean(means.values()) if means else float("nan")


def aso(a: Sequence[float], b: Sequence[float], seed: int = 1234,
        iterations: int = 1000) -> float:
    """eps_min of "A is almost stochastically larger than B" over seed scores (deepsig's
    ``aso``, ``iterations`` bootstrap iterations, confidence 0.95).

    Returns:
        eps_min in [0, 1]: 0 means A dominates B everywhere; 1, B dominates A.

    Raises:
        ValueError: fewer than two scores on a side.
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("almost stochastic order needs at least two seeds per side")
    import warnings

    from deepsig import aso as deepsig_aso

    with warnings.catch_warnings():  # "division by zero in violation ratio": eps_min is then 0/1
        warnings.simplefilter("ignore")
        return float(deepsig_aso(list(map(float, a)), list(map(float, b)), seed=seed,
                                 show_progress=False, num_jobs=1,
                                 num_bootstrap_iterations=iterations))


def paired_bootstrap(stats_a: Sequence[np.ndarray], stats_b: Sequence[np.ndarray],
                     score: Callable[[np.ndarray], np.ndarray], samples: int = BOOTSTRAP_SAMPLES,
                     seed: int = 0) -> dict:
    """Paired bootstrap over test items of the difference of seed-mean scores, A minus B.

    Args:
        stats_a, stats_b: per seed, ``[N, K]`` per-item statistics
            (:mod:`bertkit.bench.declarations`), the same N test items in the same order everywhere.
        score: summed statistics ``[..., K]`` -> score ``[...]``.
        samples: bootstrap resamples.
        seed: the resampling generator's seed.

    Returns:
        ``{"delta", "low", "high", "p"}``: the observed difference, its 95% percentile interval,
        and the one-sided p-value: the share of resamples whose difference does not have the
        observed sign (difference <= 0 for a positive observation).

    Raises:
        ValueError: sides with different item counts.
    """
    n = {s.shape[0] for s in list(stats_a) + list(stats_b)}
    if len(n) != 1:
        raise ValueError(f"the runs scored different numbers of test items: {sorted(n)}")
    n_items = n.pop()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_items, size=(samples, n_items))
    counts = np.zeros((samples, n_items))  # [S, N]: how often each item is drawn
    np.add.at(counts, (np.arange(samples)[:, None], idx), 1)

    def side(stats: Sequence[np.ndarray]) -> tuple[float, np.ndarray]:
        observed = float(np.mean([score(s.sum(axis=0)) for s in stats]))
        resampled = np.mean([score(counts @ s) for s in stats], axis=0)  # [S]
        return observed, resampled

    obs_a, res_a = side(stats_a)
    obs_b, res_b = side(stats_b)
    delta, deltas = obs_a - obs_b, res_a - res_b
    p = float(np.mean(deltas <= 0)) if delta > 0 else float(np.mean(deltas >= 0))
    return {"delta": delta, "low": float(np.percentile(deltas, 2.5)),
            "high": float(np.percentile(deltas, 97.5)), "p": p}


def verdict(a: dict, b: dict, eps_min: float | None, p: float | None,
            alpha: float = 0.05) -> str:
    """"better", "worse" or "none" for A against B (``summary`` dicts, points).

    "none" when the difference of means is inside the seed spread (at most the larger sd), or
    when a test that could run does not support it: ``eps_min`` (:func:`aso` of the side with
    the higher mean over the other) >= :data:`ASO_THRESHOLD`, or the bootstrap's one-sided
    ``p`` >= ``alpha / 2`` (the two-sided test at ``alpha``: a verdict agrees with the
    ``1 - alpha`` interval the report shows, which then excludes zero).
    """
    delta = a["mean"] - b["mean"]
    if abs(delta) <= max(a["sd"], b["sd"]):
        return "none"
    supported = []
    if eps_min is not None:
        supported.append(eps_min < ASO_THRESHOLD)
    if p is not None:
        supported.append(p < alpha / 2)
    if supported and not all(supported):
        return "none"
    return "better" if delta > 0 else "worse"
