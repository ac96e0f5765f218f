"""Sentence-classification data: JSON lines (SciBERT's ``{"text", "label"}`` release form), CSV or
TSV with a header row, or a registered set under ``$BERTKIT_DATA/cls/<name>/``.

Every record is checked as it is read: bad JSON, a missing, null or non-string text field, a
missing label or a label of the wrong kind stop the run with ``FILE:LINE`` before anything is
trained, unless ``skip_bad_lines`` (then each is skipped and listed). ``LINE`` is the physical
line where the record starts, also for a CSV/TSV record whose quoted fields hold line breaks.

Labels are kept as strings, NFC-normalised and stripped (:func:`bertkit.data.text.normalize_label`:
``"Uses "`` and ``"Uses"`` are one label; each respelling is noted with both spellings). With
``label_sep`` a string label is a delimited list (``"a;b"``); :func:`delimited_labels` spots labels
that look delimited when no separator is given. A CSV/TSV header naming a column twice, and a JSON
object naming a field twice, are refused (which one would be used is a guess). ``quoting="none"``
reads a CSV/TSV file whose texts hold ``"`` as plain characters (an unquoted TSV export).
A single-label file whose labels are all integers (``"label": 3``)
is read with them as strings (``3`` and ``"3"`` are the same label); an integer label in a file
whose other labels are strings is an error (it would silently become a class of its own).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertkit.data.conll import read_lines
from bertkit.data.sets import entry, not_available, resolve_local
from bertkit.data.text import normalize_label, visible
from bertkit.errors import BertkitError
from bertkit.tasks.cls.examples import Columns, TextExample  # noqa: F401 (re-exported)
from bertkit.tasks.cls.pairs import _same_form
from bertkit.tasks.cls.labels import (SEPARATORS, check_known_labels,  # noqa: F401 (re-exported)
                                      delimited_labels, label_set, labels_missing_from,
                                      training_labels_source)

EXTENSIONS = (".jsonl", ".json", ".csv", ".tsv")
LAYOUT = "cls/<name>/{train,dev,test}.jsonl"


@dataclass
class ReadResult:
    """The examples of one file, the lines skipped (``"file:line: reason"``, one entry per
    physical line dropped) and notes (``"file:line: ..."``: labels read in another spelling)."""

    examples: list[TextExample]
    bad_lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _label(value: Any, cols: Columns, string_label: tuple[int, str] | None = None,
           list_label: int | None = None) -> str | list[str]:
    """The label of one record as a string (single-label) or a list of strings (multi-label).

    Args:
        string_label: (line, label) of a string label elsewhere in the file: an integer single
            label is then refused; None: an integer label is read as its string.
        list_label: the line of a list label elsewhere in a multi-label file read without
            ``label_sep``: a string label is then refused (is it one label, or a list written
            another way?); None: a string label is a list of one.
    """
    if cols.multi_label:
        if isinstance(value, str) and list_label is not None:
            raise ValueError(f"'{cols.label}' is the string {value!r} but the file's other "
                             f"labels are lists (line {list_label}): write it as a list "
                             f"([{json.dumps(value)}]), or pass --label-sep if strings are "
                             f"delimited lists")
        if isinstance(value, str):
            parts = value.split(cols.label_sep) if cols.label_sep else [value]
            return sorted({normalize_label(v) for v in parts} - {""})
        if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                           for v in value):
            return sorted({normalize_label(str(v)) for v in value} - {""})
        raise ValueError(f"'{cols.label}' is {value!r}, expected a list of labels")
    if isinstance(value, list):
        raise ValueError(f"'{cols.label}' is a list {value!r}: pass --multi-label for "
                         f"multi-label data")
    if _is_int(value) and string_label is not None:
        line, other = string_label
        raise ValueError(f"'{cols.label}' is the integer {value} but the file's other labels "
                         f"are strings (line {line}: {other!r}), so it would become a label of "
                         f"its own; write it as a string (\"{value}\"), or pass --multi-label "
                         f"with a list of labels")
    if isinstance(value, str) and not normalize_label(value):
        raise ValueError(f"'{cols.label}' is empty, expected a label")
    if not isinstance(value, str) and not _is_int(value):
        raise ValueError(f"'{cols.label}' is {_kind(value)}, expected a string label (or "
                         f"--multi-label with a list of labels)")
    return normalize_label(str(value))


def _kind(value: Any) -> str:
    """A JSON value's kind in JSON's words (``null``, ``number``, ``object``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    return {dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


def make_example(record: Any, cols: Columns, labelled: bool, file: str, line: int,
                 string_label: tuple[int, str] | None = None, list_label: int | None = None,
                 pair_line: int | None = None) -> TextExample:
    """A :class:`TextExample` from one parsed record (dict).

    Args:
        labelled: the label is required and read; False (``predict``): any label is ignored,
            and a text that is empty once control and zero-width characters are removed gives
            an example flagged ``empty`` instead of an error.
        string_label: (line, label) of a string label elsewhere in the file, where there is
            one: an integer single label is then refused; None: read as its string.
        list_label: the line of a list label elsewhere in a multi-label file (see
            :func:`_label`): a string label is then refused.
        pair_line: the line of a record with a pair text, where the file has one: a sentence-pair
            file, so a record without its pair text (missing, null or empty) is refused.

    Raises:
        ValueError: not an object; a text field that is missing, null, not a string or empty;
            a label that is missing, null, empty or of the wrong kind (when ``labelled``); the
            message is the reason only (the caller adds file:line).
    """
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object but {type(record).__name__}")
    if cols.text not in record:
        found = ", ".join(sorted(map(str, record))) or "none"
        raise ValueError(f"no text field '{cols.text}' (fields: {found}); name it with "
                         f"--text-column")
    text = record[cols.text]
    if not isinstance(text, str):
        raise ValueError(f"'{cols.text}' is {_kind(text)}, expected a string")
    empty = not visible(text)  # white space, control or zero-width characters only
    if empty and labelled:
        raise ValueError(f"'{cols.text}' is empty, expected a non-empty string"
                         + (" (it holds only control or zero-width characters)"
                            if text.strip() else ""))
    pair = record.get(cols.pair)
    if pair is not None and not isinstance(pair, str):
        raise ValueError(f"'{cols.pair}' is {_kind(pair)}, expected a string")
    if pair_line is not None and not (pair and visible(pair)):
        how = "no pair text field" if cols.pair not in record else \
            f"'{cols.pair}' is {'null' if pair is None else 'empty'}:"
        raise ValueError(f"{how} '{cols.pair}' but the file is of sentence pairs (line "
                         f"{pair_line} has one): the pair text is needed"
                         if how.startswith("no") else
                         f"{how} the file is of sentence pairs (line {pair_line} has one), "
                         f"expected the pair text")
    label = None
    if labelled:
        if cols.label not in record:
            found = ", ".join(sorted(map(str, record)))
            raise ValueError(f"no label field '{cols.label}' (fields: {found}); name it with "
                             f"--label-column")
        if record[cols.label] is None:
            raise ValueError(f"'{cols.label}' is null, expected a label"
                             + (" list" if cols.multi_label else " string"))
        label = _label(record[cols.label], cols, string_label, list_label)
    return TextExample(text, pair or None, label, file, line, dict(record), empty=empty)


class BadRecord(ValueError):
    """A record that cannot be read, running from its first line to ``last`` (a quote left
    open joins several physical lines into one record: each of them is dropped with it)."""

    def __init__(self, message: str, last: int | None = None) -> None:
        super().__init__(message)
        self.last = last


def _is_table(path: Path) -> bool:
    return path.suffix.lower() in (".csv", ".tsv")


def _table_records(path: Path, cols: Columns, labelled: bool):
    """Yield ``(line, record dict or ValueError)`` for the rows of a CSV/TSV file with a header.

    ``line`` is the physical line where the record starts (a quoted field may hold line breaks,
    so a record can span several lines; the csv reader's ``line_num`` counts physical lines).
    A quote left open joins the following rows into one field; where that changes the number of
    fields the record is refused, and in a TSV file a field spanning lines that holds a tab (a
    TSV writer cannot write one) is refused too, since it has the header's number of fields.
    A refused record spanning several lines is a :class:`BadRecord` naming its last line.
    ``cols.quoting == "none"``: quotes are plain characters (no field spans lines).

    Raises:
        BertkitError: a header without the text column (or, when ``labelled``, the label
            column), a header naming a column twice, or a record the csv module cannot parse.
    """
    kind = path.suffix.lower()[1:].upper()
    quote_hint = "" if cols.quoting == "none" else \
        "; --quoting none reads a \" as a plain character (an unquoted export)"
    # a lone CR inside a line is text (csv would refuse it unquoted): carried as NUL, which
    # read_lines never passes, and put back in each field
    raw = [text.replace("\r", "\x00") for _, text in read_lines(path, old_mac=labelled)]
    reader = csv.reader((text + "\n" for text in raw),
                        delimiter="\t" if kind == "TSV" else ",",
                        quoting=csv.QUOTE_NONE if cols.quoting == "none" else csv.QUOTE_MINIMAL)
    header: list[str] | None = None
    header_line = 0
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise BertkitError(f"unreadable {kind} record: {exc}{quote_hint}", file=path,
                               line=start,
                               expected=f"{kind} rows with quotes closed on the same record"
                               ) from None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank line
        if header is None:
            header, header_line = [h.strip() for h in row], start
            seen: dict[str, int] = {}
            for k, name in enumerate(header, 1):
                if name in seen:
                    raise BertkitError(
                        f"the header row names column '{name}' twice (columns {seen[name]} and "
                        f"{k}): which one holds the data is a guess", file=path, line=start,
                        expected="a header row with distinct column names")
                seen[name] = k
            for name, flag, needed in ((cols.text, "--text-column", True),
                                       (cols.label, "--label-column", labelled)):
                if needed and name not in header:
                    raise BertkitError(
                        f"the header row has no column '{name}' (columns: "
                        f"{', '.join(header)})", file=path, line=start,
                        expected=f"a first row naming the columns, or {flag} naming one of them")
            continue
        if len(row) != len(header):
            end = reader.line_num
            delimiter = "\t" if kind == "TSV" else ","
            span = (f" (the record runs over lines {start}-{end}: is a quote left open?)"
                    if end > start else " (a field holds the delimiter: is a quote left open?)"
                    if any(delimiter in field for field in row) else "")
            yield start, BadRecord(f"{len(row)} fields, the header (line {header_line}) has "
                                   f"{len(header)}{span}{quote_hint if span else ''}", end)
            continue
        if kind == "TSV" and reader.line_num > start:
            merged = [h for h, field in zip(header, row) if "\n" in field and "\t" in field]
            if merged:  # a TSV text holds no tab: rows joined by a quote left open
                yield start, BadRecord(
                    f"column '{merged[0]}' holds a line break and a tab: the record runs over "
                    f"lines {start}-{reader.line_num}, rows joined by a quote left open?"
                    f"{quote_hint}", reader.line_num)
                continue
        dropped = _quotes_dropped(raw[start - 1], row, header) \
            if kind == "TSV" and cols.quoting == "csv" and reader.line_num == start else None
        if dropped:
            yield start, BadRecord(dropped + quote_hint)
            continue
        yield start, dict(zip(header, (f.replace("\x00", "\r") for f in row)))


def _quotes_dropped(line: str, row: list[str], header: list[str]) -> str | None:
    """Why a one-line TSV record reads other than its text: a field that starts with ``"`` but
    is not a well-formed quoted field (``"Hello," she said``), which the csv rules read without
    its quotes; None when every field reads as written (or as a well-formed quoted field)."""
    fields = line.split("\t")
    if len(fields) != len(row):
        return None
    for name, written, parsed in zip(header, fields, row):
        if written == parsed:
            continue
        quoted = len(written) >= 2 and written[0] == written[-1] == '"' \
            and written[1:-1].replace('""', "").count('"') == 0
        if not quoted:
            return (f"column '{name}' is {written!r}, which the csv quoting rules read as "
                    f"{parsed!r}: quotes dropped")
    return None


def _records(path: Path, cols: Columns = Columns(), labelled: bool = True):
    """Yield ``(line, record or ValueError)`` for a JSON-lines, CSV or TSV file."""
    if _is_table(path):
        yield from _table_records(path, cols, labelled)
        return
    for number, text in read_lines(path, old_mac=labelled):
        if not text.strip():
            continue
        try:
            yield number, json.loads(text, object_pairs_hook=_unique_fields)
        except json.JSONDecodeError as exc:
            yield number, ValueError(f"not JSON: {exc.msg} at column {exc.colno}")
        except ValueError as exc:  # a field named twice
            yield number, exc


def _unique_fields(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object's fields as a dict; a field named twice is refused (``json`` keeps the
    last silently)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the object names field '{key}' twice ({out[key]!r} and "
                             f"{value!r}): which one is meant is a guess")
        out[key] = value
    return out


def _expected(path: Path, cols: Columns, labelled: bool, pairs: bool = False) -> str:
    """What a record of ``path`` should be, in the words of its format (``pairs``: a file of
    sentence pairs, whose records need the pair text too)."""
    label = ("a list of labels" if cols.multi_label else "a string label")
    if _is_table(path):
        kind = path.suffix.lower()[1:].upper()
        return (f"a {kind} row with as many fields as the header row, the text in column "
                f'"{cols.text}" (--text-column)'
                + (f', the pair text in column "{cols.pair}" (--text-pair-column)' if pairs
                   else "")
                + (f' and the label in column "{cols.label}" (--label-column)' if labelled
                   else ""))
    return (f'one JSON object a line with "{cols.text}" (a non-empty string)'
            + (f', "{cols.pair}" (the pair text, a non-empty string)' if pairs else "")
            + (f' and "{cols.label}" ({label})' if labelled else ""))


def read_examples(path: str | Path, cols: Columns = Columns(), labelled: bool = True,
                  skip_bad_lines: bool = False) -> ReadResult:
    """Read the examples of one file (JSON lines, or CSV/TSV with a header row).

    Each example's ``line`` is the physical line where its record starts. With single-label
    data, integer labels are read as strings when every label of the file is an integer, and
    refused (file:line) when the file's other labels are strings. ``labelled=False``
    (``predict``): labels are neither required nor checked.

    Raises:
        BertkitError: missing file, bad encoding, a CSV/TSV header without the text (or label)
            column, the first bad record (without ``skip_bad_lines``: ``FILE:LINE``, the reason
            and what a record should be), or a file with no example.
    """
    path = Path(path)
    records = list(_records(path, cols, labelled))
    string_label = None  # integer labels are read as strings only where no label is a string
    if labelled and not cols.multi_label:
        string_label = next(((n, rec[cols.label]) for n, rec in records
                             if isinstance(rec, dict) and isinstance(rec.get(cols.label), str)
                             and rec[cols.label]), None)
    list_label = None  # a multi-label file with list labels refuses string ones
    if labelled and cols.multi_label and not cols.label_sep:
        list_label = next((n for n, rec in records if isinstance(rec, dict)
                           and isinstance(rec.get(cols.label), list)), None)
    pair_line = next((n for n, rec in records if isinstance(rec, dict)  # a sentence-pair file
                      and isinstance(rec.get(cols.pair), str) and visible(rec[cols.pair])), None)
    expected = _expected(path, cols, labelled, pair_line is not None)
    out, bad, notes, respelled = [], [], [], set()
    for number, rec in records:
        try:
            if isinstance(rec, ValueError):
                raise rec
            out.append(make_example(rec, cols, labelled, str(path), number, string_label,
                                    list_label, pair_line))
        except ValueError as exc:
            if not skip_bad_lines:
                raise BertkitError(str(exc), file=path, line=number,
                                   expected=f"{expected}; or --skip-bad-lines") from None
            bad.append(f"{path}:{number}: {exc}")
            last = getattr(exc, "last", None) or number  # every physical line it drops
            bad.extend(f"{path}:{n}: dropped with the record of line {number}"
                       for n in range(number + 1, last + 1))
            continue
        if labelled:
            value = rec.get(cols.label)
            raws = value if isinstance(value, list) else [] if cols.label_sep else [value]
            for raw in raws:
                if isinstance(raw, str) and raw != normalize_label(raw) and raw not in respelled:
                    respelled.add(raw)
                    notes.append(f"{path}:{number}: label {raw!r} read as "
                                 f"{normalize_label(raw)!r} (Unicode NFC, surrounding spaces "
                                 f"removed)")
    if not out:
        raise BertkitError("no examples found", file=path, expected=expected)
    return ReadResult(out, bad, notes)


def load_cls_data(data: str, splits: tuple[str, ...], cols: Columns = Columns(),
                  skip_bad_lines: bool = False, notes: list[str] | None = None
                  ) -> tuple[dict, dict, dict]:
    """Load ``splits`` of ``data`` (a directory or a registered name: BERTKIT_DATA, else hub).

    Args:
        notes: a list that receives the files' notes (labels read in another spelling).

    Returns:
        (``{split: [TextExample]}``, ``{split: source}``, ``{split: [bad line, ...]}``).

    Raises:
        BertkitError: unknown name, missing split file, a bad line (without ``skip_bad_lines``),
            or a registered set neither under BERTKIT_DATA nor reachable on the hub.
    """
    files = resolve_local(data, "cls", EXTENSIONS, splits)
    if files is None:
        from bertkit.tasks.cls.hub import load_hub

        reg = entry("cls", data)
        loaded = load_hub(reg.hub_id if reg else "", splits, cols)
        if loaded is None:
            raise not_available("cls", data, LAYOUT)
        return loaded, {s: f"hub:{reg.hub_id}" for s in splits}, {s: [] for s in splits}
    out, sources, bad = {}, {}, {}
    for split, path in files.items():
        read = read_examples(path, cols, labelled=True, skip_bad_lines=skip_bad_lines)
        out[split], sources[split], bad[split] = read.examples, str(path), read.bad_lines
        if notes is not None:
            notes.extend(read.notes)
    _same_form(out, sources, cols)
    return out, sources, bad
