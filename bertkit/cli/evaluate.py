"""``bertkit evaluate ner``: thin wrapper over :func:`bertkit.tasks.ner.evaluate_ner`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from bertkit.cli import _options as opt
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
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Windows per batch.", min=1)] = 32,
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


@evaluate_app.command("re")
@user_errors
def re_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help="Registered set or directory with split .jsonl files.")],
    split: Annotated[str, typer.Option("--split", help="train, dev or test.")] = "test",
    output: Annotated[Optional[Path], typer.Option("--output", help="Also write metrics as JSON here.")] = None,
    predictions: Annotated[Optional[Path], typer.Option("--predictions", help="Also write each pair with its predicted label as JSON lines here.")] = None,
    confusion: Annotated[Optional[Path], typer.Option("--confusion", help="Also write the confusion matrix as PATH.csv and PATH.png.")] = None,
    negative_label: Annotated[Optional[str], typer.Option("--negative-label", help="Label left out of micro/macro-F1 (auto, a label, or -). \\[default: the one saved with the model]")] = None,
    skip_bad_lines: Annotated[bool, typer.Option("--skip-bad-lines", help="Skip and count unreadable lines.")] = False,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Pairs per batch.", min=1)] = 64,
) -> None:
    """Score a saved relation model on a labelled split: micro/macro-F1, accuracy, per label."""
    from bertkit.cli._report import label_table
    from bertkit.io import write_json
    from bertkit.tasks.common import write_label_outputs
    from bertkit.tasks.re import evaluate_re
    from bertkit.tasks.re.task import prediction_lines

    console = Console()
    metrics, xs, pred, prob, labels = evaluate_re(model, data, split, device, precision, batch_size,
                                                  skip_bad_lines, negative_label, console)
    console.print(label_table(metrics, f"{split}: {data}"))
    if output:
        write_json(output, metrics)
    write_label_outputs(confusion, predictions, prediction_lines(xs, labels, pred, prob)
                        if predictions else "", metrics, f"{split}: {data}")


@evaluate_app.command("dep")
@user_errors
def dep_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help="Registered set (genia) or directory with .conllu split files.")],
    split: Annotated[str, typer.Option("--split", help="train, dev or test (genia: dev is the held-out tenth of dev.conllu).")] = "test",
    decoder: Annotated[Optional[str], typer.Option("--decoder", help="mst or eisner. \\[default: as trained]")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", help="Also write metrics as JSON here.")] = None,
    predictions: Annotated[Optional[Path], typer.Option("--predictions", help="Also write the parses as CoNLL-U here.")] = None,
    skip_bad_sentences: Annotated[bool, typer.Option("--skip-bad-sentences", help="Leave out gold sentences that are malformed or not trees, counted in the metrics, instead of stopping.")] = False,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Sentences per batch.", min=1)] = 64,
) -> None:
    """Score a saved dependency parser on a labelled split: UAS/LAS without and with punctuation,
    per relation, complete match."""
    from bertkit.cli._report import parse_table
    from bertkit.data.conllu import format_conllu
    from bertkit.io import write_json, write_text
    from bertkit.tasks.dep import evaluate_dep

    console = Console()
    metrics, sents, heads, rels = evaluate_dep(model, data, split, device, precision, batch_size,
                                               decoder, console, skip_bad_sentences)
    console.print(parse_table(metrics, f"{split}: {data}"))
    if output:
        write_json(output, metrics)
    if predictions:
        write_text(predictions, format_conllu(sents, heads, rels))


@evaluate_app.command("cls")
@user_errors
def cls_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help="Registered set (scicite, acl-arc, paper-field) or directory with split .jsonl/.csv/.tsv files.")],
    split: Annotated[str, typer.Option("--split", help="train, dev or test.")] = "test",
    output: Annotated[Optional[Path], typer.Option("--output", help="Also write metrics as JSON here.")] = None,
    predictions: Annotated[Optional[Path], typer.Option("--predictions", help="Also write each text with its predicted label as JSON lines here.")] = None,
    confusion: Annotated[Optional[Path], typer.Option("--confusion", help="Also write the confusion matrix as PATH.csv and PATH.png (single-label models).")] = None,
    text_column: Annotated[Optional[str], typer.Option("--text-column", help="Field or column holding the text. \\[default: as trained]")] = None,
    label_column: Annotated[Optional[str], typer.Option("--label-column", help="Field or column holding the label. \\[default: as trained]")] = None,
    skip_bad_lines: Annotated[bool, typer.Option("--skip-bad-lines", help="Skip and count unreadable lines.")] = False,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Texts per batch.", min=1)] = 64,
) -> None:
    """Score a saved text classifier on a labelled split: macro-F1, micro-F1, accuracy, per label,
    beside the majority-class baseline."""
    from bertkit.cli._report import label_table
    from bertkit.io import write_json
    from bertkit.tasks.common import write_label_outputs
    from bertkit.tasks.cls import evaluate_cls
    from bertkit.tasks.cls.task import prediction_lines

    console = Console()
    metrics, xs, pred, probs, labels = evaluate_cls(model, data, split, device, precision,
                                                    batch_size, skip_bad_lines, text_column,
                                                    label_column, console)
    console.print(label_table(metrics, f"{split}: {data}"))
    if output:
        write_json(output, metrics)
    write_label_outputs(confusion, predictions, prediction_lines(
        xs, labels, pred, probs, metrics.get("confusion") is None) if predictions else "",
        metrics, f"{split}: {data}")
