"""``bertkit predict <task>``: one command per registered task (:mod:`bertkit.tasks.registry`),
each declaring its own options (typer reads them from the function) and running the one shared
body, :func:`predict_saved`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional, Literal

import typer
from rich.console import Console

from bertkit.cli import _options as opt
from bertkit.cli._app import predict_app, user_errors


def predict_saved(task_name: str, model: str, input: Path, output: Path | None,
                  **kwargs: Any) -> str:
    """Run the ``predict`` function of task ``task_name`` (:mod:`bertkit.tasks.registry`) on
    ``input`` with the saved model ``model``; notes go to standard error, the predictions to
    ``output`` (written atomically by the task) or, without one, to standard output.

    Args:
        kwargs: the task's ``predict`` options (input_format, device, batch_size, ...).

    Returns:
        the predictions' text.

    Raises:
        BertkitError: from the task's ``predict`` (unknown format, bad input, no saved model).
    """
    from bertkit.tasks.registry import get_task

    text = get_task(task_name).predict(model, str(input), str(output) if output else None,
                                       console=Console(stderr=True), **kwargs)
    if output is None:
        typer.echo(text, nl=False)
    return text


@predict_app.command("ner")
@user_errors
def ner_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    input: Annotated[Path, typer.Option("--input", "-i", help="CoNLL file (token first) or plain text, one sentence a line.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write here (atomically) instead of standard output.")] = None,
    format: Annotated[Literal["conll", "jsonl"], typer.Option("--format", "-f", help="conll (token, gold if the input has it, predicted) or jsonl (line, tokens, tags, spans).")] = "conll",
    input_format: Annotated[Literal["auto", "conll", "text"], typer.Option("--input-format", help="auto, conll or text (one sentence a line).")] = "auto",
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Windows per batch.", min=1)] = 32,
) -> None:
    """Tag new text with a saved NER model; every input word gets exactly one tag."""
    predict_saved("ner", model, input, output, fmt=format, input_format=input_format,
                  device=device, precision=precision, batch_size=batch_size)


@predict_app.command("re")
@user_errors
def re_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    input: Annotated[Path, typer.Option("--input", "-i", help="JSON lines (marker, span or TACRED form; label optional) or plain text, one << >>/[[ ]]-marked sentence a line.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write here (atomically) instead of standard output.")] = None,
    input_format: Annotated[Literal["auto", "jsonl", "text"], typer.Option("--input-format", help="auto, jsonl or text.")] = "auto",
    skip_bad_lines: Annotated[bool, typer.Option("--skip-bad-lines", help="Skip and count unreadable lines.")] = False,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Pairs per batch.", min=1)] = 64,
) -> None:
    """Classify entity pairs with a saved relation model: JSON lines with predicted and probability."""
    predict_saved("re", model, input, output, input_format=input_format, device=device,
                  precision=precision, batch_size=batch_size, skip_bad_lines=skip_bad_lines)


@predict_app.command("dep")
@user_errors
def dep_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    input: Annotated[Path, typer.Option("--input", "-i", help="CoNLL-U file (HEAD/DEPREL may be _) or plain text, one sentence a line.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write here (atomically) instead of standard output.")] = None,
    input_format: Annotated[Literal["auto", "conllu", "text"], typer.Option("--input-format", help="auto, conllu or text.")] = "auto",
    decoder: Annotated[Optional[opt.Decoder], typer.Option("--decoder", help="mst or eisner. \\[default: as trained]")] = None,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Sentences per batch.", min=1)] = 64,
) -> None:
    """Parse new text with a saved dependency parser; writes CoNLL-U with HEAD and DEPREL filled
    in (every sentence a well-formed tree) and every other column as it came."""
    predict_saved("dep", model, input, output, input_format=input_format, device=device,
                  precision=precision, batch_size=batch_size, decoder=decoder)


@predict_app.command("cls")
@user_errors
def cls_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    input: Annotated[Path, typer.Option("--input", "-i", help="JSON lines or CSV/TSV (header row; the text field as trained, or --text-column; label optional) or plain text, one text a line.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write here (atomically) instead of standard output.")] = None,
    input_format: Annotated[Literal["auto", "jsonl", "csv", "tsv", "text"], typer.Option("--input-format", help="auto (by extension, else jsonl when the file starts with {, else text), jsonl, csv, tsv or text.")] = "auto",
    text_column: Annotated[Optional[str], typer.Option("--text-column", help="Field or column holding the text. \\[default: as trained]")] = None,
    skip_bad_lines: Annotated[bool, typer.Option("--skip-bad-lines", help="Skip and count unreadable lines.")] = False,
    quoting: Annotated[Optional[opt.Quoting], typer.Option("--quoting", help="CSV/TSV quotes: csv or none (a \" is a plain character). \\[default: as trained]")] = None,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Texts per batch.", min=1)] = 64,
) -> None:
    """Classify texts with a saved text classifier: JSON lines with predicted and probability,
    one per input record (per line for plain text); a text empty once control and zero-width
    characters are removed is flagged "empty": true, not labelled."""
    predict_saved("cls", model, input, output, input_format=input_format, device=device,
                  precision=precision, batch_size=batch_size, skip_bad_lines=skip_bad_lines,
                  text_column=text_column, quoting=quoting)


@predict_app.command("qa")
@user_errors
def qa_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    input: Annotated[Path, typer.Option("--input", "-i", help="JSON lines with id, question, context (answers optional) or SQuAD JSON.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write here (atomically) instead of standard output.")] = None,
    null_threshold: Annotated[Optional[float], typer.Option("--null-threshold", help="SQuAD 2.0 models: answer empty when null score - best span score is above this. \\[default: the one saved with the model]")] = None,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Windows per batch.", min=1)] = 64,
) -> None:
    """Answer questions over their contexts with a saved QA model: JSON lines with id, answer,
    start/end (character offsets into the original context; -1 when empty) and score (start +
    end logit)."""
    predict_saved("qa", model, input, output, device=device, precision=precision,
                  batch_size=batch_size, null_threshold=null_threshold)
