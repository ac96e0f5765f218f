"""``bertkit evaluate <task>``: one command per registered task (:mod:`bertkit.tasks.registry`),
each declaring its own options (typer reads them from the function) and running the one shared
body, :func:`evaluate_saved`: the task's ``evaluate`` function, its ``report`` table, and the
metrics/predictions/confusion files asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer
from rich.console import Console

from bertkit.cli import _options as opt
from bertkit.cli._app import evaluate_app, make_console, user_errors


def evaluate_saved(task_name: str, model: str, data: str, split: str, output: Path | None,
                   predictions: Path | None, format_predictions: Callable[..., str],
                   confusion: Path | None = None, **kwargs: Any) -> dict:
    """Score the saved model ``model`` of task ``task_name`` on ``split`` of ``data`` and print
    the task's table; write the metrics (JSON) to ``output``, the predictions to
    ``predictions`` and the confusion matrix to ``confusion``.csv/.png, each when given.

    Args:
        format_predictions: ``format_predictions(*rest) -> str`` over what the task's
            ``evaluate`` returns after the metrics (examples, predictions, ...).
        kwargs: the task's ``evaluate`` options (device, precision, batch_size, ...).

    Returns:
        the metrics.

    Raises:
        BertkitError: from the task's ``evaluate`` (no saved model, bad data, unknown split).
    """
    from bertkit.io import write_json
    from bertkit.tasks.common import parse_split, write_label_outputs
    from bertkit.tasks.registry import get_task

    task = get_task(task_name)
    console = make_console()
    metrics, *rest = task.evaluate(model, data, split, console=console, **kwargs)
    held_out_note(task_name, model, parse_split(split), console, data)
    title = f"{split}: {data}"
    console.print(task.report(metrics, title))
    if output:
        write_json(output, metrics)
    write_label_outputs(confusion, predictions,
                        format_predictions(*rest) if predictions else "", metrics, title)
    return metrics


def held_out_note(task_name: str, model: str, split: str, console: Console | None,
                  data: str | None = None) -> str | None:
    """A warning when ``split`` is ``dev`` and the saved run was trained on its dev file less a
    held-out part (``split_from_dev`` in the run's ``results.json``): ``evaluate`` reads the
    whole dev file, so part of what it scores was trained on. The held-out part's scores are
    ``results.json``'s ``dev``. A dependency parser of a set without a train file (GENIA; the run
    says ``automatic``, or ``data`` has no train file) is the exception: ``evaluate dep`` scores
    every 10th dev sentence itself (and says so), the held-out part of a run with fraction 0.1;
    another fraction is warned about.

    Returns:
        the warning printed on ``console`` (None: nothing to warn about).
    """
    import json

    from rich.markup import escape

    if split != "dev":
        return None
    root = Path(model)
    found = [p for p in (root / "results.json", root.parent / "results.json") if p.is_file()]
    try:
        held = json.loads(found[0].read_text(encoding="utf-8")).get("split_from_dev") \
            if found else None
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(held, dict):
        return None
    trained = held.get("split_train", held.get("train"))  # the split's own sizes
    kept = held.get("split_dev", held.get("dev"))
    if task_name == "dep" and (held.get("automatic") or not _has_train_file(data)):
        if held.get("fraction") == 0.1:
            return None  # evaluate dep scores the same held-out tenth
        warning = (f"evaluate dep scores every 10th sentence of {held.get('source')} (a set "
                   f"without a train file), but this model held out a fraction "
                   f"{held.get('fraction')} ({trained} trained on, {kept} held out): some of the "
                   f"sentences scored here were trained on. The held-out part's scores are "
                   f"\"dev\" in {found[0]}")
    else:
        warning = (f"this model was trained on {held.get('source')} less every example held out "
                   f"as dev (fraction {held.get('fraction')}: {trained} trained on, {kept} held "
                   f"out); the dev split scored here is the whole file, trained-on examples "
                   f"included. The held-out part's scores are \"dev\" in {found[0]}")
    if console is not None:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    return warning


def _has_train_file(data: str | None) -> bool:
    """Whether the dependency data ``data`` has a train file (True when unknown)."""
    if data is None:
        return True
    from bertkit.data.sets import resolve_local
    from bertkit.errors import BertkitError
    from bertkit.tasks.dep.data import EXTENSIONS

    try:
        return bool(resolve_local(data, "dep", EXTENSIONS, ("train",)))
    except BertkitError:
        return False


@evaluate_app.command("ner")
@user_errors
def ner_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help=opt.data_help("ner", "under $BERTKIT_DATA") + " or a directory with split files.")],
    split: Annotated[opt.Split, typer.Option("--split", help="train, dev or test.")] = "test",
    output: Annotated[Optional[Path], typer.Option("--output", help="Also write metrics as JSON here.")] = None,
    predictions: Annotated[Optional[Path], typer.Option("--predictions", help="Also write token, gold, predicted as CoNLL here.")] = None,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Windows per batch.", min=1)] = 32,
) -> None:
    """Score a saved NER model on a labelled split: entity precision, recall and F1 per type."""
    from bertkit.data.conll import format_conll

    evaluate_saved("ner", model, data, split, output, predictions, format_conll, device=device,
                   precision=precision, batch_size=batch_size)


@evaluate_app.command("re")
@user_errors
def re_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help=opt.data_help("re", "under $BERTKIT_DATA/re/") + " or a directory with split .jsonl files.")],
    split: Annotated[opt.Split, typer.Option("--split", help="train, dev or test.")] = "test",
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
    from bertkit.tasks.re.task import prediction_lines

    evaluate_saved("re", model, data, split, output, predictions,
                   lambda xs, pred, prob, labels: prediction_lines(xs, labels, pred, prob),
                   confusion, device=device, precision=precision, batch_size=batch_size,
                   skip_bad_lines=skip_bad_lines, negative_label=negative_label)


@evaluate_app.command("dep")
@user_errors
def dep_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help=opt.data_help("dep", "under $BERTKIT_DATA/dep/") + " or a directory with .conllu split files.")],
    split: Annotated[opt.Split, typer.Option("--split", help="train, dev or test (genia: dev is the held-out tenth of dev.conllu).")] = "test",
    decoder: Annotated[Optional[opt.Decoder], typer.Option("--decoder", help="mst or eisner. \\[default: as trained]")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", help="Also write metrics as JSON here.")] = None,
    predictions: Annotated[Optional[Path], typer.Option("--predictions", help="Also write the parses as CoNLL-U here.")] = None,
    skip_bad_sentences: Annotated[bool, typer.Option("--skip-bad-sentences", help="Leave out gold sentences that are malformed or not trees, counted in the metrics, instead of stopping.")] = False,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Sentences per batch.", min=1)] = 64,
) -> None:
    """Score a saved dependency parser on a labelled split: UAS/LAS without and with punctuation,
    per relation, complete match."""
    from bertkit.data.conllu import format_conllu

    evaluate_saved("dep", model, data, split, output, predictions, format_conllu, device=device,
                   precision=precision, batch_size=batch_size, decoder=decoder,
                   skip_bad_sentences=skip_bad_sentences)


@evaluate_app.command("cls")
@user_errors
def cls_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help=opt.data_help("cls", "under $BERTKIT_DATA/cls/") + " or a directory with split .jsonl/.csv/.tsv files.")],
    split: Annotated[opt.Split, typer.Option("--split", help="train, dev or test.")] = "test",
    output: Annotated[Optional[Path], typer.Option("--output", help="Also write metrics as JSON here.")] = None,
    predictions: Annotated[Optional[Path], typer.Option("--predictions", help="Also write each text with its predicted label as JSON lines here.")] = None,
    confusion: Annotated[Optional[Path], typer.Option("--confusion", help="Also write the confusion matrix as PATH.csv and PATH.png (single-label models).")] = None,
    text_column: Annotated[Optional[str], typer.Option("--text-column", help="Field or column holding the text. \\[default: as trained]")] = None,
    label_column: Annotated[Optional[str], typer.Option("--label-column", help="Field or column holding the label. \\[default: as trained]")] = None,
    skip_bad_lines: Annotated[bool, typer.Option("--skip-bad-lines", help="Skip and count unreadable lines.")] = False,
    quoting: Annotated[Optional[opt.Quoting], typer.Option("--quoting", help="CSV/TSV quotes: csv or none (a \" is a plain character). \\[default: as trained]")] = None,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Texts per batch.", min=1)] = 64,
) -> None:
    """Score a saved text classifier on a labelled split: macro-F1, micro-F1, accuracy, per label,
    beside the majority-class baseline."""
    from bertkit.tasks.cls.task import prediction_lines

    def lines(xs, pred, probs, labels) -> str:  # a multi-label model predicts label lists
        return prediction_lines(xs, labels, pred, probs, any(isinstance(p, list) for p in pred))

    evaluate_saved("cls", model, data, split, output, predictions, lines, confusion,
                   device=device, precision=precision, batch_size=batch_size,
                   skip_bad_lines=skip_bad_lines, text_column=text_column,
                   label_column=label_column, quoting=quoting)


@evaluate_app.command("qa")
@user_errors
def qa_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Run directory (or its model/ folder).")],
    data: Annotated[str, typer.Option("--data", "-d", help=opt.data_help("qa", "under $BERTKIT_DATA/qa/") + " or a directory with split .json (SQuAD JSON) or .jsonl files.")],
    split: Annotated[opt.Split, typer.Option("--split", help="train, dev or test.")] = "test",
    output: Annotated[Optional[Path], typer.Option("--output", help="Also write metrics as JSON here.")] = None,
    predictions: Annotated[Optional[Path], typer.Option("--predictions", help="Also write each question's answer (id, answer, start, end, score, gold) as JSON lines here.")] = None,
    null_threshold: Annotated[Optional[float], typer.Option("--null-threshold", help="SQuAD 2.0: answer empty when null score - best span score is above this. \\[default: the one saved with the model]")] = None,
    device: opt.InferenceDevice = "auto",
    precision: opt.InferencePrecision = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Windows per batch.", min=1)] = 64,
) -> None:
    """Score a saved QA model on a labelled split with the official SQuAD scorer: EM and F1
    (SQuAD 2.0: also HasAns/NoAns and the best threshold)."""
    from bertkit.tasks.qa.task import prediction_lines

    def lines(xs, answers, v2, threshold) -> str:
        return prediction_lines(xs, answers, v2, threshold, gold=True)

    evaluate_saved("qa", model, data, split, output, predictions, lines, device=device,
                   precision=precision, batch_size=batch_size, null_threshold=null_threshold)
