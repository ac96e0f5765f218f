"""``bertkit predict ner``: thin wrapper over :func:`bertkit.tasks.ner.predict_ner`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from bertkit.cli._app import predict_app, user_errors


@predict_app.command("ner")
@user_errors
def ner_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    input: Annotated[Path, typer.Option("--input", "-i", help="CoNLL file (token first) or plain text, one sentence a line.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write here (atomically) instead of standard output.")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="conll (token [gold] predicted) or jsonl (tokens, tags, spans).")] = "conll",
    input_format: Annotated[str, typer.Option("--input-format", help="auto, conll or text.")] = "auto",
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda, cuda:N or mps.")] = "auto",
    precision: Annotated[str, typer.Option("--precision", help="auto, fp32, bf16 or fp16.")] = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Windows per batch.", min=1)] = 64,
) -> None:
    """Tag new text with a saved NER model; every input word gets exactly one tag."""
    from bertkit.tasks.ner import predict_ner

    text = predict_ner(model, str(input), str(output) if output else None, format, input_format,
                       device, precision, batch_size, Console(stderr=True))
    if output is None:
        typer.echo(text, nl=False)
