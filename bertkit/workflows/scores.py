"""Test scores over fine-tuning seeds (mean and sample standard deviation, in points) and the
adapted-versus-baseline table of ``bertkit adapt``."""

from __future__ import annotations

import math


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1; 0 for one value).

    >>> mean_sd([80.0, 82.0])
    (81.0, 1.4142135623730951)
    """
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def task_metrics(task: str) -> list[tuple[str, str, float]]:
    """The test metrics ``adapt`` shows for a registered task: its headline metrics
    (:attr:`Task.headline <bertkit.tasks.base.Task>`, the model card's), as ``(key, label,
    scale to points, range)`` (the range in the metric's units, :func:`bertkit.tasks.base.score_bounds`);
    the first is the task's main score."""
    from bertkit.tasks.base import score_bounds
    from bertkit.tasks.registry import get_task

    spec = get_task(task)
    return [(m.key, f"test {m.short}", m.scale, score_bounds(spec, m.key)) for m in spec.headline]


def score_summary(metrics, runs: list[dict]) -> dict:
    """Per-metric test scores in points over fine-tuning runs (the statistics of ``--seeds``,
    :func:`bertkit.tasks.driver.seed_statistics`).

    Args:
        metrics: ``(key, label)`` pairs of ``run["test"]`` scores in [0, 1], or ``(key, label,
            scale)`` (1.0 for scores already in points), or ``(key, label, scale, bounds)`` (the
            range the interval is clipped to, in the metric's units: ``(-1, 1)`` for a
            correlation; default ``(0, 100 / scale)``); the first is the task's main score.
        runs: results of the fine-tuning runs (one per seed), each with ``test``.

    Returns:
        ``{key: {"label", "values" (points, one per run), "mean", "sd", "ci95_low",
        "ci95_high"}}`` (sd 0 and no interval for one run).

    >>> score_summary([("f1", "F1")], [{"test": {"f1": 0.5}}])["f1"]["mean"]
    50.0
    """
    from bertkit.tasks.driver import seed_statistics

    out = {}
    for key, label, *rest in metrics:
        k = rest[0] if rest else 100.0
        rng = rest[1] if len(rest) > 1 else (0.0, 100.0 / k)
        s = seed_statistics([{key: float(r["test"][key])} for r in runs], lambda _: k,
                            lambda _: rng)[key]
        out[key] = {"label": label, "values": [k * v for v in s["values"]], "mean": k * s["mean"],
                    "sd": k * (s["std"] or 0.0),
                    **{c: None if s[c] is None else k * s[c] for c in ("ci95_low", "ci95_high")}}
    return out


def _cell(s: dict) -> str:
    return f"{s['mean']:.2f}" if len(s["values"]) == 1 else \
        f"{s['mean']:.2f} ± {s['sd']:.2f} (n={len(s['values'])})"


def comparison_table(summary: dict, title: str):
    """A rich table of the adapted model's test scores beside the baseline's (points; mean ±
    sample standard deviation over seeds), with a note when a gain is inside the seed spread."""
    from rich.table import Table

    base = summary.get("baseline")
    table = Table(title=title)
    for col in ("metric", "adapted") + (("baseline (unadapted)", "difference") if base else ()):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for key, a in summary["adapted"].items():
        row = [a["label"], _cell(a)]
        if base:
            b, diff = base[key], summary["difference"][key]
            inside = len(a["values"]) > 1 and abs(diff) <= max(a["sd"], b["sd"])
            row += [_cell(b), f"{diff:+.2f}{' *' if inside else ''}"]
        table.add_row(*row)
    if base:
        one = len(next(iter(summary["adapted"].values()))["values"]) < 2
        table.caption = ("one seed each: --seeds 1,2,3 shows whether a difference exceeds seed "
                         "noise" if one else "* inside the seed spread (|difference| <= the "
                                                 "larger standard deviation): no gain shown")
    return table
