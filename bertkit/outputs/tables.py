"""Rich tables for results, shared by the tasks (their `report`) and the command line.

Every name that comes from the data (labels, entity types, relations, the data set in a title)
is escaped (:func:`rich.markup.escape`): a label such as ``[bold]`` or ``[/x]`` is shown as
written, never read as markup.
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table


def _per_name_table(title: str, caption: str, columns: tuple[str, ...], keys: tuple[str, ...],
                    rows: dict[str, dict]) -> Table:
    """A table whose first section has a row per name of ``rows`` (sorted): the name (escaped),
    its ``keys`` in percent and its ``support``, under ``columns`` (the name's first)."""
    table = Table(title=escape(title), caption=caption)
    for col in columns:
        table.add_column(col, justify="left" if col == columns[0] else "right")
    for name, row in sorted(rows.items()):
        table.add_row(escape(name), *(f"{100 * row[k]:.2f}" for k in keys), str(row["support"]))
    table.add_section()
    return table


def entity_table(metrics: dict, title: str) -> Table:
    """Per-type and overall entity precision/recall/F1 (percent), with the scoring mode named."""
    table = _per_name_table(title, "seqeval strict IOB2 (exact spans); conlleval = seqeval "
                                   "default mode", ("type", "precision", "recall", "F1", "support"),
                            ("precision", "recall", "f1"), metrics["per_type"])
    support = sum(r["support"] for r in metrics["per_type"].values())
    table.add_row("[bold]micro (strict)", f"{100 * metrics['precision']:.2f}",
                  f"{100 * metrics['recall']:.2f}", f"[bold]{100 * metrics['f1']:.2f}", str(support))
    table.add_row("macro (strict)", "", "", f"{100 * metrics['macro_f1']:.2f}", "")
    table.add_row("micro (conlleval)", f"{100 * metrics['conlleval_precision']:.2f}",
                  f"{100 * metrics['conlleval_recall']:.2f}", f"{100 * metrics['conlleval_f1']:.2f}", "")
    if "token_macro_f1" in metrics:  # token level, prefix dropped (PICO's figure)
        table.add_row("token macro", "", "", f"{100 * metrics['token_macro_f1']:.2f}", "")
    return table


def _absent_labels(metrics: dict) -> set:
    """Single-label scores: the labels with no gold example and no prediction (support 0, an
    empty confusion column), which macro-F1 leaves out (:func:`bertkit.metrics.cls.label_table`);
    empty when the confusion matrix is not there."""
    labels, confusion = metrics.get("labels"), metrics.get("confusion")
    if not labels or not confusion or len(confusion) != len(labels):
        return set()
    return {lab for j, lab in enumerate(labels)
            if sum(row[j] for row in confusion) == 0 and sum(confusion[j]) == 0}


def label_scores_table(metrics: dict, title: str) -> Table:
    """Per-label precision/recall/F1 (percent) and the averages of a classification-style task,
    every average named, with the majority-class baseline (:func:`baseline_row`).

    Relation scores (metrics with ``negative_label``, :func:`bertkit.metrics.re.relation_scores`):
    micro (headline, with its precision and recall), macro and accuracy, the negative label
    marked. Classification scores (:func:`bertkit.metrics.cls.label_scores`): macro-F1
    (headline, SciBERT's metric), micro-F1 and accuracy; multi-label scores with BLURB's HoC
    figures (:func:`bertkit.metrics.cls.hoc_f1`) add a ``HoC (BLURB)`` row.
    """
    relation = "negative_label" in metrics
    neg = metrics.get("negative_label")
    if not relation:
        caption = "scikit-learn; macro-F1 = unweighted mean over labels (SciBERT's metric)" + (
            "; HoC = micro-F1 over documents x labels (BLURB's HoC metric)"
            if "hoc_f1" in metrics else "")
    elif neg:
        caption = (f"scikit-learn; micro and macro exclude the negative label ({escape(repr(neg))}); "
                   "accuracy counts every pair")
    else:
        caption = "scikit-learn; no negative label: micro-F1 = accuracy"
    table = Table(title=escape(title), caption=caption)
    for col in ("label", "precision", "recall", "F1", "support"):
        table.add_column(col, justify="left" if col == "label" else "right")
    absent = _absent_labels(metrics)
    for name, row in sorted(metrics["per_label"].items()):
        name_cell = escape(f"{name} (negative)" if relation and name == neg else name)
        cells = (["-"] * 3 if name in absent else
                 [f"{100 * row[k]:.2f}" for k in ("precision", "recall", "f1")])
        table.add_row(name_cell, *cells, str(row["support"]))
    if absent:
        table.caption += ("; -: a label neither in this split's gold labels nor predicted, "
                          "left out of macro")
    table.add_section()
    if relation:
        table.add_row("[bold]micro", f"{100 * metrics['micro_precision']:.2f}",
                      f"{100 * metrics['micro_recall']:.2f}",
                      f"[bold]{100 * metrics['micro_f1']:.2f}", str(metrics["support"]))
        table.add_row("macro", "", "", f"{100 * metrics['macro_f1']:.2f}", "")
    else:
        table.add_row("[bold]macro", "", "", f"[bold]{100 * metrics['macro_f1']:.2f}",
                      str(metrics["support"]))
        table.add_row("micro", "", "", f"{100 * metrics['micro_f1']:.2f}", "")
    multi = bool(metrics.get("baseline", {}).get("multi_label"))
    table.add_row("accuracy (exact set)" if multi else "accuracy", "", "",
                  f"{100 * metrics['accuracy']:.2f}", "")
    if isinstance(metrics.get("hoc_f1"), (int, float)):  # BLURB's HoC score (multi-label)
        table.add_row("HoC (BLURB)", f"{100 * metrics['hoc_precision']:.2f}",
                      f"{100 * metrics['hoc_recall']:.2f}", f"{100 * metrics['hoc_f1']:.2f}",
                      f"{metrics.get('hoc_documents', '')} docs")
    baseline_row(table, metrics)
    return table


def baseline_row(table: Table, metrics: dict) -> None:
    """Add the majority-class baseline, ``baseline (all LABEL)``: every example given the majority
    label, its macro-F1 in the F1 column and accuracy in the last, when the metrics carry one
    (:func:`bertkit.metrics.collapse.collapse_report`); the row fits at 80 columns."""
    from bertkit.metrics.collapse import label_phrase

    base = metrics.get("baseline")
    if not base or base.get("majority_label") is None:
        return
    label = base["majority_label"]
    shown = ": " + label_phrase(tuple(label)) if isinstance(label, list) else " " + label
    table.caption = (table.caption or "") + ("; baseline rows: a constant prediction's macro-F1 "
                                             "under F1, its accuracy (acc) or micro-F1 (micro) "
                                             "in the last column, not a support")
    table.add_row(escape(f"baseline (all{shown})"), "", "",
                  f"{100 * base['baseline_macro_f1']:.2f}",
                  f"acc {100 * base['baseline_accuracy']:.2f}")
    if "every_label_macro_f1" in base:  # multi-label: every label for every example
        table.add_row("baseline (every label)", "", "", f"{100 * base['every_label_macro_f1']:.2f}",
                      f"micro {100 * base['every_label_micro_f1']:.2f}")


def parse_table(metrics: dict, title: str) -> Table:
    """Dependency parsing scores (percent): UAS/LAS without and with punctuation, complete match,
    non-projective share, then LAS/precision/F1 per gold relation; the punctuation rule as caption."""
    table = _per_name_table(title, metrics["punct_rule_text"] + "; bertkit always decodes "
                                                                "well-formed trees",
                            ("relation", "LAS", "precision", "F1", "support"),
                            ("las", "precision", "f1"), metrics["per_rel"])
    table.add_row("[bold]UAS / LAS (no punct)", f"[bold]{100 * metrics['uas']:.2f} / "
                  f"{100 * metrics['las']:.2f}", "", "", str(metrics["scored_words"]))
    table.add_row("UAS / LAS (with punct)", f"{100 * metrics['uas_punct']:.2f} / "
                  f"{100 * metrics['las_punct']:.2f}", "", "", str(metrics["words"]))
    table.add_row("UCM / LCM (no punct)", f"{100 * metrics['ucm']:.2f} / {100 * metrics['lcm']:.2f}",
                  "", "", str(metrics["sentences"]))
    table.add_row("non-projective trees", f"{100 * metrics['nonprojective']:.2f} "
                  f"(gold {100 * metrics['gold_nonprojective']:.2f})", "", "", "")
    return table


def seed_table(summary: dict, title: str, headline: tuple[str, ...] = ()) -> Table:
    """``--seeds`` summary: per split and metric the mean, sample standard deviation and 95%
    t-interval of the mean (in points by each metric's ``scale``, as
    :func:`bertkit.tasks.driver.seed_statistics` records it: x100 for a fraction, x1 for a score
    in points; what is no score as it is), and each seed's value; the task's
    ``headline`` metrics (its Task's ``headline`` keys) first, in their order."""
    table = Table(title=escape(title), caption=f"n = {len(summary['seeds'])} seeds; 95% interval: mean ± "
                                       f"t(0.975, n-1) · std / sqrt(n); selected by dev "
                                       f"{summary.get('select_metric')}")
    for col in ("split", "metric", "mean", "std", "95% interval", "per seed"):
        table.add_column(col, justify="left" if col in ("split", "metric") else "right")

    for split in ("dev", "test"):
        stats = summary["metrics"].get(split) or {}
        first = [k for k in headline if k in stats]
        for name, s in [(k, stats[k]) for k in first] + [(k, v) for k, v in stats.items()
                                                         if k not in first]:
            scale = s.get("scale") or 1.0  # the task's (seed_statistics): never from values

            def fmt(x, scale=scale):
                return "-" if x is None else f"{scale * x:.2f}"

            table.add_row(split, f"[bold]{name}" if name == summary.get("select_metric") else name,
                          fmt(s["mean"]), fmt(s["std"]),
                          "-" if s["ci95_low"] is None else f"{fmt(s['ci95_low'])} – "
                                                            f"{fmt(s['ci95_high'])}",
                          " ".join(fmt(v) for v in s["values"]))
        table.add_section()
    return table
