"""Statistics over fine-tuning seeds (``--seeds``, ``adapt``): per metric the mean, the sample
standard deviation and the 95% t-interval of the mean, clipped to the metric's range."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from bertkit.tasks.base import score_bounds, score_scale

# the dev record's training progress (train_tokens, train_seconds) is no score of the split
NOT_METRICS = frozenset({"epoch", "step", "steps", "global_step", "n", "support", "train_tokens",
                         "train_seconds"})


def seed_statistics(records: list[dict], scale: Callable[[str], float | None] = None,
                    bounds: Callable[[str], tuple[float | None, float | None] | None] = None
                    ) -> dict:
    """Per metric (numeric top-level keys present in every record): mean, sample standard
    deviation, the 95% t-interval of the mean, n, the values in seed order and ``scale``.

    Args:
        records: one metrics dict per seed.
        scale: ``scale(key)``: the metric's factor to points (100 for a fraction, 1 for a score
            in points, as :attr:`bertkit.outputs.modelcard.Metric.scale` says), None for what is no
            score (a loss, a time, a count); default :func:`bertkit.tasks.base.score_scale` of a
            task whose scores are fractions; nothing is decided from the values.
        bounds: ``bounds(key)``: the metric's range in its own units, ``(low, high)`` (None on
            a side: unbounded; :func:`bertkit.tasks.base.score_bounds`), None: not clipped;
            default ``(0, 100 / scale)`` for a score. The interval is clipped to it.

    With one seed the standard deviation and interval are None.

    >>> s = seed_statistics([{"f1": 80.0}, {"f1": 82.0}, {"f1": 84.0}], lambda key: 1.0)["f1"]
    >>> s["mean"], s["std"], round(s["ci95_high"], 2), s["scale"]
    (82.0, 2.0, 86.97, 1.0)
    """
    if scale is None:
        scale = lambda key: score_scale(None, key)  # noqa: E731
    if bounds is None:
        bounds = lambda key: (0.0, 100.0 / scale(key)) if scale(key) else None  # noqa: E731
    from scipy import stats

    keys = [k for k, v in (records[0] if records else {}).items()
            if k not in NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool)
            and all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)
                    for r in records)]
    out = {}
    for key in keys:
        values = [float(r[key]) for r in records]
        n = len(values)
        mean = sum(values) / n
        if n > 1:
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
            half = float(stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
            low, high = mean - half, mean + half
            lo, hi = bounds(key) or (None, None)  # a score cannot leave its range
            low = low if lo is None else max(low, lo)
            high = high if hi is None else min(high, hi)
        else:
            std = low = high = None
        out[key] = {"mean": mean, "std": std, "ci95_low": low, "ci95_high": high, "n": n,
                    "values": values, "scale": scale(key)}
    return out


def seed_summary(task: Any, data: str, seeds: list[int], root: Path, results: dict) -> dict:
    """``summary.json``: the runs and, per split and metric, the seeds' mean, standard deviation
    and 95% interval (:func:`seed_statistics`)."""
    return {"task": task.name, "data": data, "model": results[seeds[0]].get("model"),
            "seeds": seeds, "runs": {str(s): str(root / f"seed-{s}") for s in seeds},
            "train_seconds": {str(s): results[s].get("train_seconds") for s in seeds},
            "select_metric": results[seeds[0]].get("select_metric") or task.select_metric,
            "metrics": {split: seed_statistics([results[s].get(split) or {} for s in seeds],
                                               lambda key: score_scale(task, key),
                                               lambda key: score_bounds(task, key))
                        for split in ("dev", "test")},
            "interval": "95% interval of the mean: mean ± t(0.975, n-1) · std / sqrt(n); "
                        "std is the sample standard deviation (n-1); for a score clipped to "
                        "its range ([0, 1] or [0, 100] by its scale, [-1, 1] for a "
                        "correlation; with few seeds the formula can pass it)"}
