"""Sentence-classification data: JSON lines (SciBERT's ``{"text", "label"}`` release form), CSV or
TSV with a header row, or a registered set under ``$BERTKIT_DATA/cls/<name>/``.

Every line is checked as it is read: bad JSON, a missing or non-string text field, a missing
label or a label of the wrong kind stop the run with ``FILE:LINE`` before anything is trained,
unless ``skip_bad_lines`` (then each is skipped and listed). Labels are kept as strings
(``1`` and ``"1"`` are the same label).
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


def _label(value: Any, cols: Columns) -> str | list[str]:
    """The label of one record as a string (single-label) or a list of strings (multi-label)."""
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
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise ValueError(f"'{cols.label}' is {value!r}, expected a label (string or integer)")
    return str(value)


def make_example(record: Any, cols: Columns, labelled: bool, file: str, line: int
                 ) -> TextExample:
    """A :class:`TextExample` from one parsed record (dict).

    Raises:
        ValueError: not an object, missing or non-string text, missing or malformed label
            (when ``labelled``); the message is the reason only (the caller adds file:line).
    """
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object but {type(record).__name__}")
    text = record.get(cols.text)
    if not isinstance(text, str):
        found = ", ".join(sorted(map(str, record))) or "none"
        raise ValueError(f"no text field '{cols.text}' (fields: {found}); name it with "
                         f"--text-column" if text is None else
                         f"'{cols.text}' is {type(text).__name__}, expected a string")
    if not text.strip():
        raise ValueError(f"'{cols.text}' is empty")
    pair = record.get(cols.pair)
    if pair is not None and not isinstance(pair, str):
        raise ValueError(f"'{cols.pair}' is {type(pair).__name__}, expected a string")
    label = None
    if cols.label in record and record[cols.label] is not None:
        label = _label(record[cols.label], cols)
    elif labelled:
        found = ", ".join(sorted(map(str, record)))
        raise ValueError(f"no label field '{cols.label}' (fields: {found}); name it with "
                         f"--label-column")
    return TextExample(text, pair or None, label, file, line, dict(record))


def _records(path: Path):
    """Yield ``(line, record or ValueError)`` for a JSON-lines, CSV or TSV file."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        rows = [(n, t) for n, t in read_lines(path)]
        lines = [t for _, t in rows]
        reader = csv.reader(lines, delimiter="\t" if suffix == ".tsv" else ",")
        header = None
        for (number, text), row in zip(rows, reader):
            if not text.strip():
                continue
            if header is None:
                header = [h.strip() for h in row]
                continue
            if len(row) != len(header):
                yield number, ValueError(f"{len(row)} columns, the header has {len(header)}")
                continue
            yield number, dict(zip(header, row))
        return
    for number, text in read_lines(path):
        if not text.strip():
            continue
        try:
            yield number, json.loads(text)
        except json.JSONDecodeError as exc:
            yield number, ValueError(f"not JSON: {exc.msg} at column {exc.colno}")


def read_examples(path: str | Path, cols: Columns = Columns(), labelled: bool = True,
                  skip_bad_lines: bool = False) -> ReadResult:
    """Read the examples of one file (JSON lines, or CSV/TSV with a header row).

    Raises:
        BertkitError: missing file, bad encoding, the first bad line (without
            ``skip_bad_lines``: ``FILE:LINE`` and the reason), or a file with no example.
    """
    path = Path(path)
    out, bad = [], []
    for number, rec in _records(path):
        try:
            if isinstance(rec, ValueError):
                raise rec
            out.append(make_example(rec, cols, labelled, str(path), number))
        except ValueError as exc:
            if not skip_bad_lines:
                raise BertkitError(str(exc), file=path, line=number,
                                   expected=f'one object a line with "{cols.text}"'
                                            + (f' and "{cols.label}"' if labelled else "")
                                            + " (or --skip-bad-lines)") from None
            bad.append(f"{path}:{number}: {exc}")
    if not out:
        raise BertkitError("no examples found", file=path,
                           expected=f'one JSON object a line with "{cols.text}"'
                                    + (f' and "{cols.label}"' if labelled else ""))
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


def check_known_labels(examples: list[TextExample], known: list[str], split: str) -> None:
    """Refuse a label the model cannot predict (absent from the training labels).

    Raises:
        BertkitError: naming the first such example's file and line, the label, and the known
            labels.
    """
    allowed = set(known)
    for ex in examples:
        labels = ex.label if isinstance(ex.label, list) else [ex.label]
        for lab in labels:
            if lab is not None and lab not in allowed:
                raise BertkitError(f"label {lab!r} in {split} is not among the training labels",
                                   file=ex.file, line=ex.line,
                                   expected="one of " + ", ".join(known))
