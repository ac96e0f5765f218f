"""``bertkit evaluate ner``: thin wrapper over :func:`bertkit.tasks.ner.evaluate_ner`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from bertkit.cli._app import evaluate_app, user_errors
from bertkit.cli._report import entity_table


@evaluate_app.command("ner")
@user_errors
def ner_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help="Registered set or directory with split files.")],
    split: Annotated[str, typer.Option("--split", help="train, dev or test.")] = "test",
    output: Annotated[Optional[Path], typer.Option("--output", help="Also write metrics as JSON here.")] = None,
    predictions: Annotated[Optional[Path], typer.Option("--predictions", help="Also write token, gold, predicted as CoNLL here.")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda, cuda:N or mps.")] = "auto",
    precision: Annotated[str, typer.Option("--precision", help="auto, fp32, bf16 or fp16.")] = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Windows per batch.", min=1)] = 64,
) -> None:
    """Score a saved NER model on a labelled split: entity precision, recall and F1 per type."""
    from bertkit.data.conll import format_conll
    from bertkit.io import write_json, write_text
    from bertkit.tasks.ner import evaluate_ner

    console = Console()
    metrics, sents, pred = evaluate_ner(model, data, split, device, precision, batch_size, console)
    console.print(entity_table(metrics, f"{split}: {data}"))
    if output:
        write_json(output, metrics)
    if predictions:
        write_text(predictions, format_conll(sents, pred))
