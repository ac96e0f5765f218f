"""``predict cls`` through the shared streaming driver (:mod:`bertkit.predict`) for JSON lines
and plain text (CSV/TSV, whose quoted fields may span lines, keep the whole-file path).

Each record gets the JSON line ``predict cls`` has always written (the input object with
``line``, ``predicted`` and ``probability`` or ``probabilities``; a text with nothing visible:
``"predicted": null, "empty": true``); blank JSON lines give none; with ``--skip-bad-lines`` a
line that does not parse, or lacks the text field, gives ``{"line": N, "skipped": reason}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from rich.console import Console

from bertkit.data.text import visible
from bertkit.predict.driver import StreamPredictor
from bertkit.predict.records import Record, open_binary
from bertkit.tasks.cls.data import TextExample, _expected, _unique_fields, make_example
from bertkit.tasks.cls.model import load_classifier
from bertkit.tasks.cls.pairs import pair_form_problem
from bertkit.training.devices import make_runtime


def stream_format(input_path: str, input_format: str) -> str | None:
    """``jsonl`` or ``text`` when ``input_path`` streams, None for CSV/TSV (read whole). ``auto``
    as :func:`bertkit.tasks.cls.task.predict_cls` decides it (by extension, ``.gz`` aside,
    else JSON lines when the file starts with ``{``)."""
    if input_format != "auto":
        return input_format if input_format in ("jsonl", "text") else None
    name = Path(input_path).name.lower().removesuffix(".gz")
    suffix = Path(name).suffix
    if suffix in (".csv", ".tsv"):
        return None
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    with open_binary(input_path) as handle:
        head = handle.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    return "jsonl" if head.startswith(b"{") else "text"


def cls_predictor(model_dir: str, input_path: str, fmt: str, device: str, precision: str,
                  batch_size: int, text_column: str | None, quoting: str | None,
                  console: Console | None, run: Callable, lines: Callable,
                  columns: Callable) -> StreamPredictor:
    """The :class:`~bertkit.predict.driver.StreamPredictor` of a saved classifier.

    Args:
        fmt: ``jsonl`` or ``text`` (:func:`stream_format`).
        run, lines, columns: :mod:`bertkit.tasks.cls.task`'s ``_run_saved`` (examples ->
            predictions, probabilities, texts shortened), ``prediction_lines`` and
            ``_saved_columns``.

    Raises:
        BertkitError: no saved classifier in ``model_dir``.
    """
    model, tokenizer, labels, meta = load_classifier(model_dir)
    runtime = make_runtime(device, precision, console)
    cols = columns(meta, text_column, None, quoting)

    pairs = meta.get("pairs")  # trained on sentence pairs (None: a model saved before)

    def check(rec: Record) -> str | None:
        if fmt == "text":
            rec.item = TextExample(rec.text, None, None, input_path, rec.line,
                                   {"text": rec.text}, empty=not visible(rec.text))
            return pair_form_problem(rec.item, pairs, cols)
        if not rec.text.strip():
            return None  # a blank line: no record, as ever
        try:
            value = json.loads(rec.text, object_pairs_hook=_unique_fields)
            rec.item = make_example(value, cols, False, input_path, rec.line)
        except ValueError as exc:
            return (f"not JSON: {exc.msg} at column {exc.colno}"
                    if isinstance(exc, json.JSONDecodeError) else str(exc))
        return pair_form_problem(rec.item, pairs, cols)

    empty: list[int] = []  # the first 11 empty lines' numbers (memory stays flat)
    n_empty = [0]

    def predict(records: list[Record]) -> list[str | None]:
        xs = [r.item for r in records if r.item is not None]
        kept = [x for x in xs if not x.empty]
        lines_empty = [x.line for x in xs if x.empty]
        n_empty[0] += len(lines_empty)
        empty.extend(lines_empty[:11 - len(empty)])
        pred, probs, shortened = run(model, tokenizer, labels, meta, kept, runtime, batch_size) \
            if kept else ([], [], 0)
        if console and shortened:
            console.print(f"note: {shortened} text(s) over the model's {meta.get('max_length')} "
                          f"pieces ({meta.get('long_text', 'head-tail')})", highlight=False)
        p, pr = iter(pred), iter(probs)
        out = iter(lines(xs, labels, [None if x.empty else next(p) for x in xs],
                         [None if x.empty else next(pr) for x in xs],
                         cols.multi_label).split("\n"))
        return [next(out) + "\n" if r.item is not None else None for r in records]

    def finish() -> None:
        if console and empty:
            shown = ", ".join(map(str, empty[:10])) + (", ..." if n_empty[0] > 10 else "")
            console.print(f"[yellow]warning:[/] {n_empty[0]} input line(s) empty once control "
                          f"and zero-width characters are removed (line {shown}): flagged "
                          f'"empty": true, not labelled', highlight=False)

    return StreamPredictor(
        "text", predict, meta["path"], unit="texts", check=check, finish=finish,
        skipped=lambda r: json.dumps({"line": r.line, "skipped": r.bad},
                                     ensure_ascii=False) + "\n",
        settings={"task": "cls", "input": fmt, "text_column": cols.text},
        expected=_expected(Path(input_path).with_suffix(".jsonl"), cols, False) + (
            f", and a pair text '{cols.pair}' (the model was trained on sentence pairs)"
            if pairs else f", and no '{cols.pair}' (the model was trained on single texts)"
            if pairs is False else "")
        if fmt == "jsonl" else "UTF-8 text, one text a line")
