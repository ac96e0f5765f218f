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


def score_summary(metrics, runs: list[dict]) -> dict:
    """Per-metric test scores in points over fine-tuning runs.

    Args:
        metrics: ``(key, label)`` pairs of ``run["test"]`` scores in [0, 1]; the first is the
            task's main score.
        runs: results of the fine-tuning runs (one per seed), each with ``test``.

    Returns:
        ``{key: {"label", "values" (points, one per run), "mean", "sd"}}``.

    >>> score_summary([("f1", "F1")], [{"test": {"f1": 0.5}}])["f1"]["mean"]
    50.0
    """
    out = {}
    for key, label in metrics:
        values = [100.0 * float(r["test"][key]) for r in runs]
        m, sd = mean_sd(values)
        out[key] = {"label": label, "values": values, "mean": m, "sd": sd}
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
