"""Runs at a constant prediction's level: a bench stage whose test score is no better than what
predicting one thing for everything gets (the collapse check of :mod:`bertkit.metrics.collapse`,
issue 17 item 6, carried into ``bench report``), and similarity runs below their encoder's
zero-shot score (:func:`zero_shot_reason`, issue 63). At a small budget (``--budget lite``, the
2 x 128 encoders) some tasks are not learnt at all: PubMedQA's majority class gives 55.20
accuracy, HoC's every hallmark for every abstract 23.1 hoc_f1. Such a score says how the run
failed, not how good the encoder is, so the report names those runs and does not judge a
comparison where every seed of both sides sits there.
"""

from __future__ import annotations

TOLERANCE = 1e-9
NEAR_EVERY_LABEL = 0.9  # hoc recall at or above this with precision under 0.5: (nearly) every
# label for every document (lite HoC seeds: recall 0.95-1.00 at precision 0.13)


def _num(t: dict, key: str) -> float | None:
    v = t.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def floor_reason(record: dict) -> str | None:
    """Why a stage's test score is no better than a constant prediction's, or None.

    Judged on the suite's metric (the record's ``metric``) from the flat test figures every
    stage record carries: accuracy at or below the majority class's share; macro-F1 at or below
    always predicting the majority class; relation micro-F1 (the negative class not scored) of
    0, what always predicting the negative class gets; hoc_f1 with recall at least
    :data:`NEAR_EVERY_LABEL` at precision under 0.5, (nearly) every label for every document;
    Pearson at or below 0, a constant prediction's (or every prediction the same). Else the
    task's own collapse warning (``collapse``, which ``bench run`` keeps from ``results.json``:
    one label for everything, or one prediction for nearly everything). Tasks scored otherwise
    (entity F1, LAS, SQuAD F1, CoNLL F1) have no constant baseline here.

    Args:
        record: a stage record (``stages/ENCODER/TASK/seed-N.json``).

    Returns:
        A phrase, its figures in the closing parentheses, e.g. ``"accuracy at or below the
        majority class's share (accuracy 55.20, share 55.20)"``; None for a run above every
        constant baseline known here.

    >>> floor_reason({"metric": "accuracy", "test": {"accuracy": 0.552, "majority_share": 0.552}})
    "accuracy at or below the majority class's share (accuracy 55.20, share 55.20)"
    >>> floor_reason({"metric": "pearson", "test": {"pearson": 0.61}}) is None
    True
    """
    t = record.get("test")
    t = t if isinstance(t, dict) else {}
    metric = record.get("metric")
    acc, share = _num(t, "accuracy"), _num(t, "majority_share")
    macro, base = _num(t, "macro_f1"), _num(t, "baseline_macro_f1")
    if metric == "accuracy" and acc is not None and share is not None \
            and acc <= share + TOLERANCE:
        return (f"accuracy at or below the majority class's share (accuracy {100 * acc:.2f}, "
                f"share {100 * share:.2f})")
    if metric == "macro_f1" and macro is not None and base is not None \
            and macro <= base + TOLERANCE:
        return (f"macro-F1 at or below always predicting the majority class (macro-F1 "
                f"{100 * macro:.2f}, the majority class's {100 * base:.2f})")
    micro = _num(t, "micro_f1")
    if metric == "micro_f1" and micro is not None and micro <= TOLERANCE:
        return "no relation found, as always predicting the negative class (micro-F1 0.00)"
    recall, precision = _num(t, "hoc_recall"), _num(t, "hoc_precision")
    if metric == "hoc_f1" and recall is not None and precision is not None \
            and recall >= NEAR_EVERY_LABEL and precision < 0.5:
        return (f"(nearly) every label for every document (hoc recall {recall:.2f}, precision "
                f"{precision:.2f})")
    pearson = _num(t, "pearson")
    if metric == "pearson" and t.get("constant_gold") is True:  # the gold's side, not the run's
        return "every gold score the same: no correlation is defined"
    if metric == "pearson" and (t.get("constant") is True or
                                (pearson is not None and pearson <= TOLERANCE)):
        return ("every prediction the same" if t.get("constant") is True else
                f"no positive correlation, a constant prediction's 0 (Pearson {pearson:.2f})")
    collapse = record.get("collapse")
    return collapse if isinstance(collapse, str) and collapse else None


def zero_shot_reason(record: dict) -> str | None:
    """Why a similarity stage's test score is below what its encoder scores with no training
    (the zero-shot row every ``finetune sim`` run keeps: ``zero_shot_pearson`` in its test
    figures, the cosine of the encoder's pooled embeddings), or None: fine-tuning made the
    encoder worse than it came (issue 63: the cross-encoder on BIOSSES, 8.36 against 84.69).

    >>> zero_shot_reason({"metric": "pearson", "test": {"pearson": 0.08,
    ...                                                  "zero_shot_pearson": 0.8469}})
    "below the encoder's zero-shot score (Pearson 8.00, zero-shot 84.69)"
    >>> zero_shot_reason({"metric": "pearson", "test": {"pearson": 0.87,
    ...                                                  "zero_shot_pearson": 0.8469}}) is None
    True
    """
    t = record.get("test")
    t = t if isinstance(t, dict) else {}
    pearson, zero = _num(t, "pearson"), _num(t, "zero_shot_pearson")
    if record.get("metric") != "pearson" or pearson is None or zero is None \
            or pearson >= zero - TOLERANCE:
        return None
    return (f"below the encoder's zero-shot score (Pearson {100 * pearson:.2f}, zero-shot "
            f"{100 * zero:.2f})")


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
