"""Runs at a constant prediction's level: a bench stage whose test score is what predicting one
thing for everything gets (the collapse check of :mod:`bertkit.metrics.collapse`, issue 17 item
6, carried into ``bench report``). At a small budget (``--budget lite``, the 2 x 128 encoders)
some tasks are not learnt at all: PubMedQA's majority class gives 55.20 accuracy, HoC's every
hallmark for every abstract 23.1 hoc_f1. Such a score measures the budget, not the encoder, so
the report names those runs and a comparison where both sides sit there is not judged.
"""

from __future__ import annotations

TOLERANCE = 1e-9


def floor_reason(record: dict) -> str | None:
    """Why a stage's test score is a constant prediction's, or None.

    The stage record's ``collapse`` (the task's own collapse warning, which ``bench run`` keeps
    from its ``results.json``) where there is one; else, from the flat test figures every record
    carries (older records have no ``collapse``): MSE at or above predicting the gold mean for every pair
    (sentence similarity); hoc_recall 1.0 with precision under 0.5 (every hallmark predicted
    for every abstract); macro-F1 at or below always predicting the majority class.

    Args:
        record: a stage record (``stages/ENCODER/TASK/seed-N.json``).

    Returns:
        A short phrase, e.g. ``"macro-F1 23.71 at or below the majority class's 23.71"``.

    >>> floor_reason({"test": {"macro_f1": 0.2371, "baseline_macro_f1": 0.2371}})
    "macro-F1 23.71 at or below always predicting the majority class's 23.71"
    >>> floor_reason({"test": {"macro_f1": 0.6, "baseline_macro_f1": 0.2371}}) is None
    True
    """
    if isinstance(record.get("collapse"), str) and record["collapse"]:
        return record["collapse"]
    t = record.get("test") or {}
    if t.get("constant") is True:
        return "every prediction the same"
    if isinstance(t.get("mse"), (int, float)) and isinstance(t.get("baseline_mse"), (int, float)) \
            and t["mse"] >= t["baseline_mse"] - TOLERANCE:
        return (f"MSE {t['mse']:.3f} at or above predicting the gold mean for every pair "
                f"({t['baseline_mse']:.3f})")
    if t.get("hoc_recall", 0.0) >= 1.0 - TOLERANCE and t.get("hoc_precision", 1.0) < 0.5:
        return (f"every label predicted for every document (hoc recall 1.00, precision "
                f"{t['hoc_precision']:.2f})")
    if isinstance(t.get("macro_f1"), (int, float)) and \
            isinstance(t.get("baseline_macro_f1"), (int, float)) and \
            t["macro_f1"] <= t["baseline_macro_f1"] + TOLERANCE:
        return (f"macro-F1 {100 * t['macro_f1']:.2f} at or below always predicting the majority "
                f"class's {100 * t['baseline_macro_f1']:.2f}")
    return None


def collapse_warning(test: dict) -> str | None:
    """The collapse warning a task's ``results.json`` ``test`` block holds (``baseline`` from
    :func:`bertkit.metrics.collapse.with_baseline`), for a stage record's ``collapse`` key; None
    where there is none or it only says the split has one gold label."""
    base = test.get("baseline") if isinstance(test, dict) else None
    if not isinstance(base, dict) or base.get("one_gold_label"):
        return None
    warning = base.get("warning")
    return warning if isinstance(warning, str) else None
