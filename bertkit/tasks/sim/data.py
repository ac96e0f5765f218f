"""Sentence-pair similarity data: JSON lines ``{"text", "text_pair", "score"}`` (the shared
BIOSSES layout), or a registered set under ``$BERTKIT_DATA/sim/<name>/``.

Every record is checked as it is read: bad JSON, a missing or non-string text or pair text, and a
score that is missing or not a finite number stop the run with ``FILE:LINE`` and what a record
should be, before anything is trained, unless ``skip_bad_lines`` (each skipped and listed).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertkit.data.conll import read_lines
from bertkit.data.sets import missing_message, resolve_local
from bertkit.errors import BertkitError

EXTENSIONS = (".jsonl", ".json")
LAYOUT = "sim/<name>/{train,dev,test}.jsonl"


@dataclass
class PairExample:
    """One text pair: ``text``, ``text_pair``, the gold ``score`` (None when unlabelled), where
    it came from and the input object ``raw`` (copied to prediction files)."""

    text: str
    text_pair: str
    score: float | None
    file: str = ""
    line: int = 0
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Fields:
    """The field names of the first text, the second text and the score."""

    text: str = "text"
    pair: str = "text_pair"
    score: str = "score"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, float) and not math.isfinite(value):  # JSON's NaN / Infinity
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return {dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


def make_pair(record: Any, fields: Fields, labelled: bool, file: str, line: int) -> PairExample:
    """A :class:`PairExample` from one parsed JSON record.

    Raises:
        ValueError: not an object; a text or pair text missing, not a string or empty; with
            ``labelled``, a score missing or not a finite JSON number (the reason only: the
            caller adds file and line).
    """
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object but {type(record).__name__}")
    texts = []
    for name, what in ((fields.text, "first text"), (fields.pair, "pair text")):
        if name not in record:
            found = ", ".join(sorted(map(str, record))) or "none"
            raise ValueError(f"no {what} field '{name}' (fields: {found}): a similarity example "
                             f"is a pair of texts")
        value = record[name]
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"'{name}' is {_kind(value) if not isinstance(value, str) else 'empty'}"
                             f", expected a non-empty string")
        texts.append(value)
    score = None
    if labelled:
        if fields.score not in record:
            raise ValueError(f"no score field '{fields.score}'")
        value = record[fields.score]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise ValueError(f"'{fields.score}' is {_kind(value)}, expected a finite number "
                             f"(the similarity score)")
        score = float(value)
    return PairExample(texts[0], texts[1], score, file, line, dict(record))


def read_pairs(path: str | Path, fields: Fields = Fields(), labelled: bool = True,
               skip_bad_lines: bool = False) -> tuple[list[PairExample], list[str]]:
    """The pairs of one JSON-lines file and the lines skipped (``"file:line: reason"``).

    Raises:
        BertkitError: missing file, bad encoding, the first bad record (without
            ``skip_bad_lines``), or a file with no pair.
    """
    path = Path(path)
    expected = (f'one JSON object a line with "{fields.text}" and "{fields.pair}" (non-empty '
                f'strings)' + (f' and "{fields.score}" (a number)' if labelled else ""))
    out, bad = [], []
    for number, text in read_lines(path, old_mac=labelled):
        if not text.strip():
            continue
        try:
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
            out.append(make_pair(record, fields, labelled, str(path), number))
        except ValueError as exc:
            if not skip_bad_lines:
                raise BertkitError(str(exc), file=path, line=number,
                                   expected=f"{expected}; or --skip-bad-lines") from None
            bad.append(f"{path}:{number}: {exc}")
    if not out:
        raise BertkitError("no text pair found", file=path, expected=expected)
    return out, bad


def load_sim_data(data: str, splits: tuple[str, ...], fields: Fields = Fields(),
                  skip_bad_lines: bool = False) -> tuple[dict, dict, dict]:
    """Load ``splits`` of ``data`` (a directory or a registered name under ``$BERTKIT_DATA``).

    Returns:
        (``{split: [PairExample]}``, ``{split: path}``, ``{split: [bad line, ...]}``).

    Raises:
        BertkitError: unknown name, missing split file, a bad line, or a registered set not
            under ``$BERTKIT_DATA``.
    """
    files = resolve_local(data, "sim", EXTENSIONS, splits)
    if files is None:
        raise BertkitError(missing_message("sim", data, LAYOUT))
    out, sources, bad = {}, {}, {}
    for split, path in files.items():
        out[split], bad[split] = read_pairs(path, fields, True, skip_bad_lines)
        sources[split] = str(path)
    return out, sources, bad
