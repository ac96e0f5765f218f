"""``predict qa`` through the shared streaming driver (:mod:`bertkit.predict`): JSON lines
(``id``, ``question``, ``context``; answers optional), a chunk of questions at a time, each with
the JSON line ``predict qa`` has always written (``id``, ``answer``, ``start``, ``end``,
``score``, v2 ``null_score_diff``). Blank lines give none; a line that does not parse or lacks a
field is a bad line (with ``--skip-bad-lines``: ``{"line": N, "skipped": reason}``).

A whole-file SQuAD JSON document or JSON array is read whole (:func:`stream_kind` is None):
the streaming options are refused on it. A question id given twice is not detected in a stream
(that would hold every id in memory); each line is answered on its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.predict.driver import StreamPredictor
from bertkit.predict.records import Record, open_binary
from bertkit.tasks.qa.answer import answer_questions, prediction_lines
from bertkit.tasks.qa.data import make_example, warn_input
from bertkit.tasks.qa.model import load_qa_model
from bertkit.training.devices import make_runtime

EXPECTED = "one JSON object a line with id, question and context"
HEAD = 1 << 16


def stream_kind(input_path: str) -> str | None:
    """``jsonl`` when the input's first non-blank line (within 64 KiB) is a whole JSON object
    that is not a SQuAD document (no ``data``); None (read whole) otherwise."""
    with open_binary(input_path) as handle:
        head = handle.read(HEAD)
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    first, nl, _ = text.partition("\n")
    if not nl and len(head) == HEAD:
        return None  # a first line longer than 64 KiB: one big document
    try:
        value = json.loads(first)
    except json.JSONDecodeError:
        return None  # pretty-printed SQuAD JSON or an array: read whole (errors named there)
    return "jsonl" if isinstance(value, dict) and "data" not in value else None


def qa_predictor(model_dir: str, input_path: str, device: str, precision: str, batch_size: int,
                 null_threshold: float | None, console: Console | None,
                 settings: Callable, threshold: Callable) -> StreamPredictor | None:
    """The :class:`~bertkit.predict.driver.StreamPredictor` of a saved QA model, or None for
    an input read whole (:func:`stream_kind`).

    Args:
        settings, threshold: :mod:`bertkit.tasks.qa.task`'s ``_saved_settings`` and
            ``_threshold``.

    Raises:
        BertkitError: no saved QA model in ``model_dir``, or a missing input.
    """
    if stream_kind(input_path) is None:
        return None
    model, tokenizer, meta = load_qa_model(model_dir)
    runtime = make_runtime(device, precision, console)
    saved = settings(model, meta)
    v2 = bool(meta.get("unanswerable"))
    cut = threshold(meta, null_threshold)
    notes: list[str] = []
    path = Path(input_path)

    def check(rec: Record) -> str | None:
        if not rec.text.strip():
            return None
        if rec.value is None:
            return rec.bad or "not a JSON object"
        try:
            rec.item = make_example(rec.value, rec.value.get("context"),
                                    str(rec.value.get("title") or ""), path, rec.line, False,
                                    notes, fields=list(rec.value))
        except BertkitError as exc:
            return exc.message
        return None

    def predict(records: list[Record]) -> list[str | None]:
        xs = [r.item for r in records if r.item is not None]
        if not xs:
            return [None] * len(records)
        answers, _ = answer_questions(model, tokenizer, xs, saved, runtime, batch_size)
        out = iter(prediction_lines(xs, answers, v2, cut).splitlines(keepends=True))
        return [next(out) if r.item is not None else None for r in records]

    def finish() -> None:
        if notes:
            warn_input(notes, console)

    return StreamPredictor(
        "jsonl", predict, meta["path"], unit="questions", check=check, expected=EXPECTED,
        skipped=lambda r: json.dumps({"line": r.line, "skipped": r.bad},
                                     ensure_ascii=False) + "\n",
        settings={"task": "qa", "null_threshold": cut}, finish=finish)
