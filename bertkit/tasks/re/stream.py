"""``predict re`` through the shared streaming driver (:mod:`bertkit.predict`): JSON lines or
marked plain text, a chunk of entity pairs at a time, each with the JSON line ``predict re`` has
always written (the input object with ``line``, ``predicted``, ``probability``); blank lines give
none; with ``--skip-bad-lines`` a line that does not parse gives ``{"line": N, "skipped": reason}``.
"""

from __future__ import annotations

import json
from typing import Callable

from rich.console import Console

from bertkit.data.relations import RelationExample, _Bad, parse_marked, parse_record
from bertkit.errors import BertkitError
from bertkit.inputs.lengths import fit_length, position_limit
from bertkit.predict.driver import StreamPredictor
from bertkit.predict.records import Record, open_binary
from bertkit.tasks.re.encoding import encode
from bertkit.tasks.re.model import load_relation_model
from bertkit.training.devices import make_runtime

EXPECTED = ("JSON lines with 'text' (<< >>, [[ ]] markers) or 'tokens' with 'subject'/'object'; "
            "or plain text, one marked sentence a line")


def stream_format(input_path: str, input_format: str) -> str:
    """``jsonl`` or ``text``: ``auto`` is JSON lines when the input starts with ``{``.

    Raises:
        BertkitError: an unknown input format.
    """
    if input_format not in ("auto", "jsonl", "text"):
        raise BertkitError(f"unknown input format '{input_format}'", expected="auto, jsonl or text")
    if input_format != "auto":
        return input_format
    with open_binary(input_path) as handle:
        head = handle.read(4096).lstrip()
    return "jsonl" if head.startswith(b"{") else "text"


def re_predictor(model_dir: str, input_path: str, input_format: str, device: str,
                 precision: str, batch_size: int, console: Console | None, classify: Callable,
                 lines: Callable) -> StreamPredictor:
    """The :class:`~bertkit.predict.driver.StreamPredictor` of a saved relation model.

    Args:
        classify, lines: :mod:`bertkit.tasks.re.task`'s ``classify`` (encoded pairs ->
            predicted ids, probabilities) and ``prediction_lines``.

    Raises:
        BertkitError: unknown format, or no saved relation model in ``model_dir``.
    """
    fmt = stream_format(input_path, input_format)
    model, tokenizer, labels, markers, marker_ids, meta = load_relation_model(model_dir)
    runtime = make_runtime(device, precision, console)
    max_length = fit_length(meta.get("max_length", 512), position_limit(model.config), console)

    def check(rec: Record) -> str | None:
        if not rec.text.strip():
            return None  # blank: no record, as ever
        try:
            if fmt == "text":
                obj, (text, e1, e2), label = {"text": rec.text}, parse_marked(rec.text), None
            else:
                try:
                    obj = json.loads(rec.text)
                except json.JSONDecodeError as exc:
                    raise _Bad(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
                text, e1, e2, label = parse_record(obj, False)
        except _Bad as exc:
            return str(exc)
        rec.item = RelationExample(text, e1, e2, label, input_path, rec.line, obj)
        return None

    def predict(records: list[Record]) -> list[str | None]:
        xs = [r.item for r in records if r.item is not None]
        if not xs:
            return [None] * len(records)
        items = encode(xs, tokenizer, marker_ids, markers, {}, max_length)
        pred, prob = classify(model, items, runtime, tokenizer.pad_token_id, batch_size)
        out = iter(lines(xs, labels, pred, prob).split("\n"))
        return [next(out) + "\n" if r.item is not None else None for r in records]

    return StreamPredictor(
        "text", predict, meta["path"], unit="pairs", check=check, expected=EXPECTED,
        skipped=lambda r: json.dumps({"line": r.line, "skipped": r.bad},
                                     ensure_ascii=False) + "\n",
        settings={"task": "re", "input": fmt})
