"""Runs at a constant prediction's level: a bench stage whose test score is no better than what
predicting one thing for everything gets (the collapse check of :mod:`bertkit.metrics.collapse`,
issue 17 item 6, carried into ``bench report``), and runs below their encoder's zero-shot score
(:func:`zero_shot_reason`, issue 63). Each check is the one the task declares for its metric
(:class:`bertkit.tasks.base.SuiteMetric`'s ``floor`` and ``zero_shot``). At a small budget
(``--budget lite``, the 2 x 128 encoders) some tasks are not learnt at all: PubMedQA's majority
class gives 55.20 accuracy, HoC's every hallmark for every abstract 23.1 HoC F1. Such a score
says how the run failed, not how good the encoder is, so the report names those runs and does
not judge a comparison where every seed of both sides sits there.
"""

from __future__ import annotations

def _declared(record: dict):
    """The suite metric a stage record names, as its task declares it
    (:func:`bertkit.bench.declarations.suite_metric`); for a record without its task kind (a partial
    record), the first registered task's that declares the name; None where none does."""
    from bertkit.bench.declarations import declared_metrics, suite_metric

    if isinstance(record.get("task_kind"), str):
        return suite_metric(record["task_kind"], record.get("metric"))
    return declared_metrics().get(record.get("metric"))


def _test(record: dict) -> dict:
    t = record.get("test")
    return t if isinstance(t, dict) else {}


def floor_reason(record: dict) -> str | None:
    """Why a stage's test score is no better than a constant prediction's, or None.

    Judged on the suite's metric (the record's ``metric``) from the flat test figures every
    stage record carries, by the check its task declares (``SuiteMetric.floor``: e.g. accuracy
    at or below the majority class's share; macro-F1 at or below always predicting the majority
    class; relation micro-F1 of 0, what always predicting the negative class gets; (nearly)
    every label for every document; Pearson at or below 0, a constant prediction's). Else the
    task's own collapse warning (``collapse``, which ``bench run`` keeps from ``results.json``:
    one label for everything, or one prediction for nearly everything). Metrics that declare no
    floor (entity F1, LAS, SQuAD F1, CoNLL F1) have no constant baseline here.

    Args:
        record: a stage record (``stages/ENCODER/TASK/seed-N.json``).

    Returns:
        A phrase, its figures in the closing parentheses, e.g. ``"accuracy at or below the
        majority class's share (accuracy 55.20, share 55.20)"``; None for a run above every
        constant baseline known here.

    Raises:
        BertkitError: the record's task kind declares no suite, or not its metric.

    >>> floor_reason({"metric": "accuracy", "test": {"accuracy": 0.552, "majority_share": 0.552}})
    "accuracy at or below the majority class's share (accuracy 55.20, share 55.20)"
    """
    metric = _declared(record)
    reason = metric.floor(_test(record)) if metric is not None and metric.floor else None
    if reason:
        return reason
    collapse = record.get("collapse")
    return collapse if isinstance(collapse, str) and collapse else None


def zero_shot_reason(record: dict) -> str | None:
    """Why a stage's test score is below what its encoder scores with no training (the check
    its metric declares, ``SuiteMetric.zero_shot``: a similarity run's ``zero_shot_pearson``,
    the cosine of the encoder's pooled embeddings, which every ``finetune sim`` run keeps), or
    None: fine-tuning made the encoder worse than it came (issue 63: the cross-encoder on
    BIOSSES, 8.36 against 84.69).

    Raises:
        BertkitError: as :func:`floor_reason`.
    """
    metric = _declared(record)
    return metric.zero_shot(_test(record)) if metric is not None and metric.zero_shot else None


def collapse_warning(test: dict) -> str | None:
    """The collapse warning a task's ``results.json`` ``test`` block holds (``baseline`` from
    :func:`bertkit.metrics.collapse.with_baseline`), for a stage record's ``collapse`` key; None
    where there is none or it only says the split has one gold label."""
    base = test.get("baseline") if isinstance(test, dict) else None
    if not isinstance(base, dict) or base.get("one_gold_label"):
        return None
    warning = base.get("warning")
    return warning if isinstance(warning, str) else None


def describe(floors: list[str | None], seeds: list[int]) -> str:
    """The report's phrase for one encoder and task: how many seeds sit at a constant
    prediction's level, grouped by reason, each seed's figures given (once where they are the
    same), e.g. ``"5 of 5 seeds: accuracy at or below the majority class's share (accuracy
    55.20, share 55.20)"``, ``"3 of 5 seeds: no positive correlation, a constant prediction's 0
    (seed 1: Pearson -0.28; seed 2: Pearson -0.25; seed 5: Pearson -0.05)"``."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for seed, phrase in zip(seeds, floors):
        if phrase:
            kind, _, figures = phrase[:-1].rpartition(" (") if phrase.endswith(")") else \
                (phrase, "", "")
            groups.setdefault(kind or phrase, []).append((seed, figures))
    hit = sum(len(v) for v in groups.values())
    parts = []
    for kind, seen in groups.items():
        figs = {f for _, f in seen}
        if figs == {""}:
            parts.append(kind)
        elif len(figs) == 1:
            parts.append(f"{kind} ({seen[0][1]})")
        else:
            parts.append(f"{kind} (" + "; ".join(f"seed {s}: {f}" for s, f in seen) + ")")
    return f"{hit} of {len(floors)} seed{'s' if len(floors) != 1 else ''}: " + "; ".join(parts)
