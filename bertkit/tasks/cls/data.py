"""Sentence-classification data: JSON lines (SciBERT's ``{"text", "label"}`` release form), CSV or
TSV with a header row, or a registered set under ``$BERTKIT_DATA/cls/<name>/``.

Every record is checked as it is read: bad JSON, a missing, null or non-string text field, a
missing label or a label of the wrong kind stop the run with ``FILE:LINE`` before anything is
trained, unless ``skip_bad_lines`` (then each is skipped and listed). ``LINE`` is the physical
line where the record starts, also for a CSV/TSV record whose quoted fields hold line breaks.

Labels are kept as strings. A single-label file whose labels are all integers (``"label": 3``)
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
from bertkit.data.sets import data_root, entry, resolve_local
from bertkit.errors import BertkitError

EXTENSIONS = (".jsonl", ".json", ".csv", ".tsv")
LAYOUT = "cls/<name>/{train,dev,test}.jsonl"


@dataclass
class TextExample:
    """One example: ``text``, optional ``text_pair``, ``label`` (a string, a list of strings
    with multi-label data, or None when unlabelled), where it came from, and the input ``raw``
    object (copied to prediction files)."""

    text: str
    text_pair: str | None = None
    label: str | list[str] | None = None
    file: str = ""
    line: int = 0
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Columns:
    """Field names: text, optional pair, label; ``multi_label``: labels are lists."""

    text: str = "text"
    pair: str = "text_pair"
    label: str = "label"
    multi_label: bool = False


@dataclass
class ReadResult:
    """The examples of one file and the lines skipped (``"file:line: reason"``)."""

    examples: list[TextExample]
    bad_lines: list[str] = field(default_factory=list)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _label(value: Any, cols: Columns, string_label: tuple[int, str] | None = None
           ) -> str | list[str]:
    """The label of one record as a string (single-label) or a list of strings (multi-label).

    Args:
        string_label: (line, label) of a string label elsewhere in the file: an integer single
            label is then refused; None: an integer label is read as its string.
    """
    if cols.multi_label:
        if isinstance(value, str):
            return [value] if value else []
        if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                           for v in value):
            return sorted({str(v) for v in value})
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
    if value == "":
        raise ValueError(f"'{cols.label}' is empty, expected a label")
    if not isinstance(value, str) and not _is_int(value):
        raise ValueError(f"'{cols.label}' is {_kind(value)}, expected a string label (or "
                         f"--multi-label with a list of labels)")
    return str(value)


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
                 string_label: tuple[int, str] | None = None) -> TextExample:
    """A :class:`TextExample` from one parsed record (dict).

    Args:
        labelled: the label is required and read; False (``predict``): any label is ignored.
        string_label: (line, label) of a string label elsewhere in the file, where there is
            one: an integer single label is then refused; None: read as its string.

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
    if not text.strip():
        raise ValueError(f"'{cols.text}' is empty, expected a non-empty string")
    pair = record.get(cols.pair)
    if pair is not None and not isinstance(pair, str):
        raise ValueError(f"'{cols.pair}' is {_kind(pair)}, expected a string")
    label = None
    if labelled:
        if cols.label not in record:
            found = ", ".join(sorted(map(str, record)))
            raise ValueError(f"no label field '{cols.label}' (fields: {found}); name it with "
                             f"--label-column")
        if record[cols.label] is None:
            raise ValueError(f"'{cols.label}' is null, expected a label"
                             + (" list" if cols.multi_label else " string"))
        label = _label(record[cols.label], cols, string_label)
    return TextExample(text, pair or None, label, file, line, dict(record))


def _is_table(path: Path) -> bool:
    return path.suffix.lower() in (".csv", ".tsv")


def _table_records(path: Path, cols: Columns, labelled: bool):
    """Yield ``(line, record dict or ValueError)`` for the rows of a CSV/TSV file with a header.

    ``line`` is the physical line where the record starts (a quoted field may hold line breaks,
    so a record can span several lines; the csv reader's ``line_num`` counts physical lines).
    A quote left open joins the following rows into one field; where that changes the number of
    fields the record is refused, and in a TSV file a field spanning lines that holds a tab (a
    TSV writer cannot write one) is refused too, since it has the header's number of fields.

    Raises:
        BertkitError: a header without the text column (or, when ``labelled``, the label
            column), or a record the csv module cannot parse.
    """
    kind = path.suffix.lower()[1:].upper()
    reader = csv.reader((text + "\n" for _, text in read_lines(path)),
                        delimiter="\t" if kind == "TSV" else ",")
    header: list[str] | None = None
    header_line = 0
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise BertkitError(f"unreadable {kind} record: {exc}", file=path, line=start,
                               expected=f"{kind} rows with quotes closed on the same record"
                               ) from None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank line
        if header is None:
            header, header_line = [h.strip() for h in row], start
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
            yield start, ValueError(f"{len(row)} fields, the header (line {header_line}) has "
                                    f"{len(header)}{span}")
            continue
        if kind == "TSV" and reader.line_num > start:
            merged = [h for h, field in zip(header, row) if "\n" in field and "\t" in field]
            if merged:  # a TSV text holds no tab: rows joined by a quote left open
                yield start, ValueError(
                    f"column '{merged[0]}' holds a line break and a tab: the record runs over "
                    f"lines {start}-{reader.line_num}, rows joined by a quote left open?")
                continue
        yield start, dict(zip(header, row))


def _records(path: Path, cols: Columns = Columns(), labelled: bool = True):
    """Yield ``(line, record or ValueError)`` for a JSON-lines, CSV or TSV file."""
    if _is_table(path):
        yield from _table_records(path, cols, labelled)
        return
    for number, text in read_lines(path):
        if not text.strip():
            continue
        try:
            yield number, json.loads(text)
        except json.JSONDecodeError as exc:
            yield number, ValueError(f"not JSON: {exc.msg} at column {exc.colno}")


def _expected(path: Path, cols: Columns, labelled: bool) -> str:
    """What a record of ``path`` should be, in the words of its format."""
    label = ("a list of labels" if cols.multi_label else "a string label")
    if _is_table(path):
        kind = path.suffix.lower()[1:].upper()
        return (f"a {kind} row with as many fields as the header row, the text in column "
                f'"{cols.text}" (--text-column)'
                + (f' and the label in column "{cols.label}" (--label-column)' if labelled
                   else ""))
    return (f'one JSON object a line with "{cols.text}" (a non-empty string)'
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
    expected = _expected(path, cols, labelled)
    out, bad = [], []
    for number, rec in records:
        try:
            if isinstance(rec, ValueError):
                raise rec
            out.append(make_example(rec, cols, labelled, str(path), number, string_label))
        except ValueError as exc:
            if not skip_bad_lines:
                raise BertkitError(str(exc), file=path, line=number,
                                   expected=f"{expected}; or --skip-bad-lines") from None
            bad.append(f"{path}:{number}: {exc}")
    if not out:
        raise BertkitError("no examples found", file=path, expected=expected)
    return ReadResult(out, bad)


def _load_hub(hub_id: str, splits: tuple[str, ...], cols: Columns) -> dict | None:
    """Examples of a registered set from the Hugging Face hub (``datasets``), or None offline.

    The text is the first of ``cols.text``, ``string``, ``sentence``, ``text`` the set has;
    a ``ClassLabel`` label is turned into its name.
    """
    from bertkit.encoders import hub_reachable

    if not hub_id or not hub_reachable():
        return None
    try:
        import datasets

        ds = datasets.load_dataset(hub_id)
    except Exception:  # noqa: BLE001 - offline, unknown id, or a script-based set
        return None
    names = {"train": ("train",), "dev": ("validation", "dev", "valid"), "test": ("test",)}
    out = {}
    for split in splits:
        name = next((n for n in names[split] if n in ds), None)
        if name is None:
            return None
        part = ds[name]
        text_col = next((c for c in (cols.text, "string", "sentence", "text")
                         if c in part.column_names), None)
        if text_col is None or cols.label not in part.column_names:
            return None
        label_names = getattr(part.features[cols.label], "names", None)
        out[split] = [TextExample(row[text_col], None, label_names[row[cols.label]] if label_names
                                  else str(row[cols.label]), f"hub:{hub_id}/{name}", i + 1,
                                  {"text": row[text_col]})
                      for i, row in enumerate(part)]
    return out


def load_cls_data(data: str, splits: tuple[str, ...], cols: Columns = Columns(),
                  skip_bad_lines: bool = False) -> tuple[dict, dict, dict]:
    """Load ``splits`` of ``data`` (a directory or a registered name: BERTKIT_DATA, else hub).

    Returns:
        (``{split: [TextExample]}``, ``{split: source}``, ``{split: [bad line, ...]}``).

    Raises:
        BertkitError: unknown name, missing split file, a bad line (without ``skip_bad_lines``),
            or a registered set neither under BERTKIT_DATA nor reachable on the hub.
    """
    files = resolve_local(data, "cls", EXTENSIONS, splits)
    if files is None:
        reg = entry("cls", data)
        loaded = _load_hub(reg.hub_id if reg else "", splits, cols)
        if loaded is None:
            root = data_root()
            where = f"BERTKIT_DATA={root} has no cls/{data}/" if root else "BERTKIT_DATA is not set"
            raise BertkitError(f"data set '{data}' is not available: {where}",
                               expected=f"BERTKIT_DATA pointing at a folder holding {LAYOUT}, or "
                                        f"--data DIRECTORY")
        return loaded, {s: f"hub:{reg.hub_id}" for s in splits}, {s: [] for s in splits}
    out, sources, bad = {}, {}, {}
    for split, path in files.items():
        read = read_examples(path, cols, labelled=True, skip_bad_lines=skip_bad_lines)
        out[split], sources[split], bad[split] = read.examples, str(path), read.bad_lines
    return out, sources, bad


def label_set(examples: list[TextExample]) -> list[str]:
    """Sorted labels used by ``examples`` (multi-label lists flattened)."""
    found: set[str] = set()
    for ex in examples:
        if isinstance(ex.label, list):
            found.update(ex.label)
        elif ex.label is not None:
            found.add(ex.label)
    return sorted(found)


def check_known_labels(examples: list[TextExample], known: list[str], split: str,
                       known_from: str = "the training labels") -> None:
    """Refuse a label the model cannot predict (absent from the training labels).

    Args:
        known: the labels the model has.
        known_from: where ``known`` came from, for the message (``"the model's labels"``, or
            :func:`training_labels_source`'s words).

    Raises:
        BertkitError: naming the first such example's file and line, the label, where the known
            labels came from, and the known labels.
    """
    allowed = set(known)
    for ex in examples:
        labels = ex.label if isinstance(ex.label, list) else [ex.label]
        for lab in labels:
            if lab is not None and lab not in allowed:
                raise BertkitError(f"label {lab!r} in {split} is not among {known_from}: the "
                                   f"model could not predict it",
                                   file=ex.file, line=ex.line,
                                   expected="one of " + ", ".join(known))


def training_labels_source(source: str, n_read: int, n_used: int) -> str:
    """Words for where the training labels came from: ``source`` with all ``n_read`` examples,
    and, when only the first ``n_used`` are trained on, that the limit did not narrow them."""
    text = f"the labels of the training data ({source}, all {n_read} examples"
    if n_used < n_read:
        text += (f"; --max-train-samples {n_used} trains on the first {n_used} but takes the "
                 f"labels from all")
    return text + ")"


def labels_missing_from(examples: list[TextExample], labels: list[str]) -> list[str]:
    """The ``labels`` no example of ``examples`` has (e.g. beyond ``--max-train-samples``)."""
    present = set(label_set(examples))
    return [lab for lab in labels if lab not in present]
