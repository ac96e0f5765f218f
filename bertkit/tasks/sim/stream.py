"""``predict sim`` through the shared streaming driver (:mod:`bertkit.predict`): JSON lines of
text pairs, a chunk at a time, each with the JSON line ``predict sim`` has always written (the
input object with ``line`` and ``predicted``). Blank lines give none; a line that does not parse
or lacks a text gives, with ``--skip-bad-lines``, ``{"line": N, "skipped": reason}``; pairs over
the model's length are cut longest first and counted in one note at the end.
"""

from __future__ import annotations

import json
from typing import Callable

from rich.console import Console

from bertkit.predict.driver import StreamPredictor
from bertkit.predict.records import Record
from bertkit.tasks.sim.data import make_pair
from bertkit.training.devices import make_runtime


def sim_predictor(model_dir: str, input_path: str, device: str, precision: str,
                  batch_size: int, console: Console | None, load: Callable, fields: Callable,
                  scorer: Callable, lines: Callable, hint: Callable) -> StreamPredictor:
    """The :class:`~bertkit.predict.driver.StreamPredictor` of a saved similarity model (a
    regressor or a bi-encoder).

    Args:
        load, fields, scorer, lines, hint: :mod:`bertkit.tasks.sim.task`'s ``_load``,
            ``_saved_fields``, ``pair_scorer``, ``prediction_lines`` and ``_single_text_hint``.

    Raises:
        BertkitError: no saved similarity model in ``model_dir``.
    """
    model, tokenizer, meta = load(model_dir)
    runtime = make_runtime(device, precision, console)
    names = fields(meta)
    score = scorer(model, tokenizer, meta, runtime, batch_size)
    max_length = int(meta.get("max_length", 256))
    texts = meta.get("architecture") == "bi-encoder"
    cut = [0]

    def check(rec: Record) -> str | None:
        if not rec.text.strip():
            return None
        if rec.value is None:
            return rec.bad or "not a JSON object"
        try:
            rec.item = make_pair(rec.value, names, False, input_path, rec.line)
        except ValueError as exc:
            return str(exc)
        return None

    def predict(records: list[Record]) -> list[str | None]:
        xs = [r.item for r in records if r.item is not None]
        if not xs:
            return [None] * len(records)
        pred, n_cut = score(xs)
        cut[0] += n_cut
        out = iter(lines(xs, pred).splitlines(keepends=True))
        return [next(out) if r.item is not None else None for r in records]

    def finish() -> None:
        if console is not None and cut[0]:
            console.print(f"note: {cut[0]} {'text(s)' if texts else 'pair(s)'} over the model's "
                          f"{max_length} pieces, cut{'' if texts else ' longest first'}",
                          highlight=False)

    return StreamPredictor(
        "jsonl", predict, meta["path"], unit="pairs", check=check,
        expected=f'one JSON object a line with "{names.text}" and "{names.pair}"{hint(meta)}',
        skipped=lambda r: json.dumps({"line": r.line, "skipped": r.bad},
                                     ensure_ascii=False) + "\n",
        settings={"task": "sim"}, finish=finish)
