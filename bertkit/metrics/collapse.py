"""The collapse check (issue 17 item 6): a classifier that predicts one label for everything
still gets the majority share as micro-F1/accuracy.

Every classification-style task (RE, cls) scores the constant majority-label prediction with its
own scorer (:func:`bertkit.metrics.cls.label_scores`, :func:`~bertkit.metrics.cls.
multilabel_scores` and :func:`bertkit.metrics.re.relation_scores` include it as ``baseline``,
through :func:`with_baseline`), and the task warns (:func:`warn_collapse`) at each evaluation
when the model's predictions use a single label, when one prediction covers nearly every example
though the gold gives it to few, or when its macro-F1 is at or below that baseline (or, for
multi-label data, at or below predicting every label).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Sequence

# a prediction covering this share of the examples or more, where the gold gives it to fewer
# than half as many, is a near-collapse (helper trial: a HoC model gave 54 of 64 documents one
# label set that no gold document has, and beat both constant baselines)
NEAR_CONSTANT = 0.9


def collapse_report(gold: Sequence, pred: Sequence, metrics: dict,
                    score: Callable[[list, list], dict], key: str = "macro_f1",
                    every_label: Sequence[str] | None = None) -> dict:
    """Compare a model's scores with constant predictions (issue 17 item 6): the majority label
    and, for multi-label data, every label for every example (the collapse a multi-label model
    falls into first: HoC's every-label micro-F1 is 23.1). At or below either is warned about.

    Args:
        gold, pred: the evaluated split's gold and predicted labels (hashable: strings, or
            tuples of labels for multi-label data).
        metrics: the model's scores from ``score(gold, pred)``.
        score: the task's own scorer, applied to ``gold`` and the constant prediction.
        key: the score compared (macro-F1: the one a collapse cannot fake).
        every_label: multi-label data: the label set predicted for every example as the second
            constant (``gold``/``pred`` then hold sorted tuples); None for single-label data.

    Returns:
        ``majority_label``, ``majority_share`` (in [0, 1]), ``baseline_macro_f1``,
        ``baseline_micro_f1``, ``baseline_accuracy`` (the scorer's figures for the constant
        prediction), ``predicted_labels`` (distinct predictions: label sets for multi-label data),
        ``top_prediction_share`` (in [0, 1]: the most common prediction's share),
        ``single_label``, ``near_constant`` (that share at least :data:`NEAR_CONSTANT` and
        over twice the gold's share of that prediction) and ``at_or_below_baseline`` (bools),
        ``multi_label`` (bool:
        ``every_label`` given; then also ``every_label_macro_f1`` and ``every_label_micro_f1``
        where the split has two gold label sets or more) and ``warning`` (a sentence, or None).

    >>> from bertkit.metrics.cls import label_scores
    >>> r = collapse_report(["a", "a", "b"], ["a", "a", "a"], {"macro_f1": 0.4},
    ...                     lambda g, p: label_scores(g, p))
    >>> r["single_label"], r["at_or_below_baseline"], round(r["baseline_macro_f1"], 2)
    (True, True, 0.4)
    """
    gold, pred = list(gold), list(pred)
    out = {"majority_label": None, "majority_share": 0.0, "baseline_macro_f1": 0.0,
           "baseline_micro_f1": 0.0, "baseline_accuracy": 0.0,
           "predicted_labels": len(set(pred)), "top_prediction_share": 0.0,
           "single_label": False, "near_constant": False,
           "at_or_below_baseline": False, "multi_label": every_label is not None,
           "warning": None}
    if not gold:
        return out
    label = _majority_baseline(out, gold, pred, score)
    top, top_gold = _top_prediction(out, gold, pred)
    value = float(metrics.get(key, 0.0))
    out["at_or_below_baseline"] = value <= out["baseline_macro_f1"] + 1e-9
    if len(set(gold)) == 1:  # one gold label: the constant prediction is perfect, no yardstick
        out["at_or_below_baseline"] = False
        out["one_gold_label"] = True  # a property of the split: said once a run (warn_collapse)
        out["warning"] = (f"every gold label of this split is {label_phrase(label)} ({len(gold)} "
                          f"examples): its scores say little and no collapse can be told "
                          f"(a --max-eval-samples cap of a label-sorted file?)")
        return out
    below = {"majority": out["at_or_below_baseline"], "every": False}
    if every_label:
        every = score(gold, [tuple(every_label)] * len(gold))
        out.update(every_label_macro_f1=float(every.get("macro_f1", 0.0)),
                   every_label_micro_f1=float(every.get("micro_f1", 0.0)))
        below["every"] = value <= out["every_label_macro_f1"] + 1e-9
        out["at_or_below_baseline"] = below["majority"] or below["every"]
    out["warning"] = _collapse_warning(out, below, key, value, label, pred, top, top_gold)
    return out


def _majority_baseline(out: dict, gold: list, pred: list,
                       score: Callable[[list, list], dict]) -> Any:
    """Score the constant majority-label prediction into ``out`` (``majority_*``,
    ``baseline_*``, ``single_label``); return the majority label."""
    label, count = Counter(gold).most_common(1)[0]
    base = score(gold, [label] * len(gold))
    out.update(majority_label=list(label) if isinstance(label, tuple) else label,
               majority_share=count / len(gold),
               baseline_macro_f1=float(base.get("macro_f1", 0.0)),
               baseline_micro_f1=float(base.get("micro_f1", 0.0)),
               baseline_accuracy=float(base.get("accuracy", 0.0)),
               single_label=len(set(pred)) == 1 and len(gold) > 1)
    return label


def _top_prediction(out: dict, gold: list, pred: list) -> tuple[Any, float]:
    """Set ``top_prediction_share`` and ``near_constant`` in ``out`` (after
    :func:`_majority_baseline`); return the most common prediction (None without predictions)
    and the gold's share of it."""
    top, top_gold = None, 0.0
    if pred:
        top, n_top = Counter(pred).most_common(1)[0]
        top_gold = sum(g == top for g in gold) / len(gold)
        out["top_prediction_share"] = n_top / len(pred)
        out["near_constant"] = (not out["single_label"] and len(pred) > 1
                                and out["top_prediction_share"] >= NEAR_CONSTANT
                                and top_gold < out["top_prediction_share"] / 2)
    return top, top_gold


def _collapse_warning(out: dict, below: dict[str, bool], key: str, value: float, label: Any,
                      pred: list, top: Any, top_gold: float) -> str | None:
    """The collapse sentence of :func:`collapse_report` from its figures in ``out`` (None: no
    sign of a collapse). ``below``: at or below the ``majority`` and ``every``-label
    baselines; ``value``: the model's ``key`` score."""
    reasons = []
    if out["single_label"]:
        reasons.append(f"every prediction is {label_phrase(pred[0])}")
    if out["near_constant"]:
        reasons.append(f"{100 * out['top_prediction_share']:.0f}% of the predictions are "
                       f"{label_phrase(top)}, which the gold gives to {100 * top_gold:.0f}%")
    if below["majority"]:
        reasons.append(f"{key} {100 * value:.2f} is at or below the majority-class baseline "
                       f"{100 * out['baseline_macro_f1']:.2f}")
    if below["every"]:
        reasons.append(f"{key} {100 * value:.2f} is at or below predicting every label for every "
                       f"example ({key} {100 * out['every_label_macro_f1']:.2f}, micro_f1 "
                       f"{100 * out['every_label_micro_f1']:.2f})")
    if not reasons:
        return None
    return ("the classifier may have collapsed: " + "; ".join(reasons) +
            f" (always predicting {label_phrase(label)}: {key} "
            f"{100 * out['baseline_macro_f1']:.2f}, accuracy "
            f"{100 * out['baseline_accuracy']:.2f}); try more epochs, another "
            f"--lr or --class-weights balanced")


def label_phrase(label: Any) -> str:
    """A label or a multi-label set as a sentence names it: ``'yes'``, ``no label``,
    ``the labels 'a' + 'b'``."""
    if isinstance(label, (tuple, list)):
        if not label:
            return "no label"
        return "the label " + repr(label[0]) if len(label) == 1 else \
            "the labels " + " + ".join(repr(x) for x in label)
    return repr(label)


def with_baseline(metrics: dict, gold: Sequence, pred: Sequence,
                  score: Callable[[list, list], dict],
                  every_label: Sequence[str] | None = None) -> dict:
    """Add :func:`collapse_report` to ``metrics`` (in place) as ``baseline``, plus the flat floats
    ``baseline_macro_f1`` and ``majority_share`` (so the training log and ``results.json``'s
    ``dev`` record them). ``score`` must not add a baseline itself. Returns ``metrics``."""
    report = collapse_report(gold, pred, metrics, score, every_label=every_label)
    metrics["baseline"] = report
    metrics["baseline_macro_f1"] = report["baseline_macro_f1"]
    metrics["majority_share"] = report["majority_share"]
    return metrics


def warn_collapse(metrics: dict, console=None, where: str = "",
                  said: set | None = None) -> str | None:
    """Print the collapse warning of ``metrics["baseline"]`` (if any) on ``console``, prefixed
    by ``where`` (e.g. ``"dev epoch 2"``). ``said``: the split notes already printed this run
    (a split with one gold label is said once, not at every dev epoch; a collapse, which may
    change from epoch to epoch, always). Returns the warning (None: nothing to warn about)."""
    baseline = metrics.get("baseline") or {}
    warning = baseline.get("warning")
    if warning and said is not None and baseline.get("one_gold_label"):
        if warning in said:
            return warning
        said.add(warning)
    if warning and console is not None:
        from rich.markup import escape

        console.print(f"[yellow]warning:[/] {escape(where + ': ' if where else '')}"
                      f"{escape(warning)}", highlight=False)
    return warning
