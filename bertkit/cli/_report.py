"""Rich tables for results."""

from __future__ import annotations

from rich.table import Table


def entity_table(metrics: dict, title: str) -> Table:
    """Per-type and overall entity precision/recall/F1 (percent), with the scoring mode named."""
    table = Table(title=title, caption="seqeval strict IOB2 (exact spans); conlleval = seqeval "
                                       "default mode")
    for col in ("type", "precision", "recall", "F1", "support"):
        table.add_column(col, justify="left" if col == "type" else "right")
    for name, row in sorted(metrics["per_type"].items()):
        table.add_row(name, f"{100 * row['precision']:.2f}", f"{100 * row['recall']:.2f}",
                      f"{100 * row['f1']:.2f}", str(row["support"]))
    support = sum(r["support"] for r in metrics["per_type"].values())
    table.add_section()
    table.add_row("[bold]micro (strict)", f"{100 * metrics['precision']:.2f}",
                  f"{100 * metrics['recall']:.2f}", f"[bold]{100 * metrics['f1']:.2f}", str(support))
    table.add_row("macro (strict)", "", "", f"{100 * metrics['macro_f1']:.2f}", "")
    table.add_row("micro (conlleval)", f"{100 * metrics['conlleval_precision']:.2f}",
                  f"{100 * metrics['conlleval_recall']:.2f}", f"{100 * metrics['conlleval_f1']:.2f}", "")
    return table
