"""Reading a corpus as a stream of records with their byte offsets, in bounded memory.

A record is the unit that gets one prediction and one output: a line of plain text or of JSON
lines, a sentence of a CoNLL file (token lines up to a blank line), a CoNLL-U sentence block, a
CoNLL-2012 document (``#begin document`` ... ``#end document``) or a whole file. Every record
carries the byte offsets where it starts and where the next one may start in the (uncompressed)
input, so a run can stop after any record and continue there (``--resume``), and its 0-based
``index``, so that chunks (``index // chunk_size``) are the same in every run and every shard.

A line that cannot be read (not UTF-8, a NUL byte, a JSON line that does not parse or is not an
object) does not stop the reader: it yields the record with ``bad`` set to the reason, and the
driver (:mod:`bertkit.predict.driver`) decides whether that is an error or a skipped line.

``.gz`` inputs are read through :mod:`gzip` (offsets are offsets into the decompressed text;
seeking forward decompresses up to the offset, once, on resume). A ``.gz`` file that ends before
its end-of-stream marker (a cut-off download or copy) or holds corrupt compressed data raises
:class:`InputCutOff`, naming the file, the line reached and the cause, after every whole record
before it (not the decompressor's ``EOFError``, which a command line takes for Ctrl-D).
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

from bertkit.data.conll import MARKER  # noqa: F401  (re-exported: the tasks' stream readers)
from bertkit.errors import BertkitError

KINDS = ("text", "jsonl", "conll", "conllu", "conll2012", "file")
"""Record kinds: one line of text, one JSON object a line, one CoNLL sentence, one CoNLL-U
sentence block (its raw lines, comments included, up to a blank line), one CoNLL-2012 document
(its raw lines from ``#begin document`` to ``#end document``), the whole file (one record: for
inputs that are one document, such as a plain-text story)."""


@dataclass
class Record:
    """One input record.

    Attributes:
        index: 0-based number of the record in the input (chunk = ``index // chunk_size``).
        line: 1-based line of its first line.
        start: byte offset of its first line; ``end``: where the next record may start.
        text: the line (``text``, ``jsonl``; without the line end); the whole decoded file
            (``file``; line ends as they are, a leading byte order mark dropped).
        value: the parsed JSON object (``jsonl``).
        rows: ``(line, columns)`` of each token line (``conll``); ``(line, [raw line])`` of each
            line of the block (``conllu``, ``conll2012``).
        bad: why the record cannot be read (None: it can), naming the line.
        raw: bytes of the stored file read so far (a ``.gz`` file's compressed bytes; for
            progress and ETA).
        item: what the task's check made of it (its parsed example), if anything.
    """

    index: int
    line: int
    start: int
    end: int
    text: str = ""
    value: dict | None = None
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    bad: str | None = None
    raw: int = 0
    item: Any = None


@dataclass(frozen=True)
class Position:
    """Where reading starts: byte ``offset``, 1-based ``line``, record ``index``."""

    offset: int = 0
    line: int = 1
    index: int = 0


_GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)


class InputCutOff(BertkitError):
    """A compressed input that cannot be read to its end: the gzip data stops before its
    end-of-stream marker, or is corrupt. ``line`` is the first line not read whole (the line
    reached); the records before it were read whole.

    Args:
        path: the input file.
        line: the line reached.
        exc: the decompressor's error (its type and text are the cause named).
    """

    def __init__(self, path: str | Path, line: int, exc: BaseException) -> None:
        cut = isinstance(exc, EOFError)
        what = ("the gzip data ends before its end-of-stream marker: the file is cut off (an "
                "interrupted download or copy?)" if cut else "the gzip data is corrupt")
        super().__init__(f"{what}; line {line} and after cannot be read (cause: "
                         f"{type(exc).__name__}: {exc})", file=path, line=line,
                         expected="a whole .gz file (gzip -t FILE checks one)")
        self.reached = line


def open_binary(path: str | Path) -> IO[bytes]:
    """``path`` opened for binary reading, through :mod:`gzip` when its name ends in ``.gz``.

    Raises:
        BertkitError: missing file, a directory, or a ``.gz`` name on a file that is not gzip.
    """
    path = Path(path)
    if not path.exists():
        raise BertkitError("file not found", file=path)
    if path.is_dir():
        raise BertkitError("is a directory", file=path, expected="a text file")
    if path.suffix == ".gz":
        with path.open("rb") as raw:
            if raw.read(2) != b"\x1f\x8b":
                raise BertkitError("not gzip data, though the name ends in .gz", file=path,
                                   expected="a gzip file, or a name without .gz")
        return gzip.open(path, "rb")
    return path.open("rb")


def _lines(handle: IO[bytes], start: Position, path: str | Path = "<input>"
           ) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, raw line)`` from ``start`` (the handle already there).

    Raises:
        InputCutOff: the gzip data stops or breaks before the end (the lines before it given).
    """
    offset, number = start.offset, start.line
    lines = iter(handle)
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return
        except _GZIP_ERRORS as exc:
            raise InputCutOff(path, number, exc) from None
        yield number, offset, raw
        offset += len(raw)
        number += 1


def _raw_position(handle: IO[bytes]):
    """A function giving the bytes of the stored file read so far."""
    inner = getattr(handle, "fileobj", None)  # gzip: the compressed file
    return inner.tell if inner is not None else handle.tell


def decode(raw: bytes, offset: int) -> tuple[str, str | None]:
    """A raw line as text without its line end, and why it is unreadable (None: readable).

    >>> decode(b"caf\\xc3\\xa9\\r\\n", 5), decode(b"a\\xffb\\n", 0)[1]
    (('café', None), 'not valid UTF-8 at byte 1 of the line')
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "", f"not valid UTF-8 at byte {exc.start} of the line"
    if offset == 0:
        text = text.lstrip("\ufeff")
    if "\x00" in text:
        return "", "binary data (NUL byte)"
    return text.rstrip("\r\n"), None


def iter_records(path: str | Path, kind: str, start: Position = Position()) -> Iterator[Record]:
    """The records of ``path`` from ``start``, in input order (see the module docstring).

    Lines end at LF or CRLF only (a lone CR stays inside its line, as ``predict`` always read
    it). A ``text`` or ``jsonl`` record is every line, blank ones included (each input line has
    its output record); a ``conll`` record is a sentence: blank lines and ``-DOCSTART-`` lines
    separate sentences and are no records; a ``conll2012`` record is a document: blank and
    comment lines between documents are no records, and lines that belong to no document (a
    token line or ``#end document`` outside one) make a record of their own, up to the next
    ``#begin document``, for the task to refuse; a document without its ``#end document`` line
    ends where the next one begins (or at the end of the file).

    Raises:
        BertkitError: the file cannot be opened; a CoNLL token line whose column count differs
            from the file's first token line (file and line named, as :func:`read_conll`).
    """
    if kind not in KINDS:
        raise BertkitError(f"unknown input kind '{kind}'", expected=", ".join(KINDS))
    handle = open_binary(path)
    try:
        if start.offset:
            try:
                handle.seek(start.offset)
            except _GZIP_ERRORS as exc:
                raise InputCutOff(path, start.line, exc) from None
        tell = _raw_position(handle)
        if kind == "file":
            if start.index == 0:  # a resume after it has nothing left
                try:
                    data = handle.read()
                except _GZIP_ERRORS as exc:
                    raise InputCutOff(path, 1, exc) from None
                yield _file_record(data, tell)
            return
        if kind in ("conllu", "conll2012"):
            blocks = _block_records if kind == "conllu" else _document_records
            for rec in blocks(_lines(handle, start, path), start.index):
                rec.raw = tell()
                yield rec
            return
        if kind == "conll":
            width = conll_width(path)
            for rec in _conll_records(path, _lines(handle, start, path), start.index, width):
                rec.raw = tell()
                yield rec
            return
        index = start.index
        for number, offset, raw in _lines(handle, start, path):
            text, bad = decode(raw, offset)
            rec = Record(index, number, offset, offset + len(raw), text, bad=bad, raw=tell())
            if kind == "jsonl" and bad is None and text.strip():
                rec.value, rec.bad = _json_object(text)
            yield rec
            index += 1
    finally:
        handle.close()


def _json_object(text: str) -> tuple[dict | None, str | None]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, None


def split_columns(text: str) -> list[str]:
    """A CoNLL line's columns: split at tabs, or at white space where the line has no tab."""
    return [c.strip() for c in (text.split("\t") if "\t" in text else text.split())]


def conll_width(path: str | Path) -> int:
    """Columns of the first token line of ``path`` (0: none found in its first 10,000 lines)."""
    with open_binary(path) as handle:
        for number, raw in _head(handle, path):
            text, bad = decode(raw, 0 if number == 1 else 1)
            if bad is None and text.strip() and not MARKER.match(text):
                cols = split_columns(text)
                if cols[0] != "-DOCSTART-":
                    return len(cols)
            if number > 10_000:
                break
    return 0


def _head(handle: IO[bytes], path: str | Path) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` up to a cut in the gzip data, if any (the stream itself
    reports it, with the records before it kept)."""
    try:
        for number, _, raw in _lines(handle, Position(), path):
            yield number, raw
    except InputCutOff:
        return


def _conll_records(path, lines, index: int, width: int) -> Iterator[Record]:
    rows: list[tuple[int, list[str]]] = []
    first = begin = 0
    bad = None
    end = 0
    for number, offset, raw in lines:
        text, why = decode(raw, offset)
        if why is None and (not text.strip() or split_columns(text)[0] == "-DOCSTART-"
                            or MARKER.match(text)):
            if rows or bad:
                yield Record(index, first, begin, offset, rows=rows, bad=bad)
                index, rows, bad = index + 1, [], None
            end = offset + len(raw)
            continue
        if not rows and bad is None:
            first, begin = number, offset
        end = offset + len(raw)
        if why is not None:
            bad = bad or f"line {number}: {why}"
            continue
        cols = split_columns(text)
        if not cols[0]:
            raise BertkitError("empty token in the first column", file=path, line=number,
                               expected="TOKEN<TAB>TAG")
        if len(cols) != width:
            want = f"{width} column{'s' if width > 1 else ''} as on the first token line"
            what = f"only one column in {text.strip()!r}" if len(cols) == 1 else \
                f"{len(cols)} columns in {text.strip()!r}"
            raise BertkitError(what, file=path, line=number, expected=f"{want}: TOKEN ... TAG")
        rows.append((number, cols))
    if rows or bad:
        yield Record(index, first, begin, end, rows=rows, bad=bad)



def _block_records(lines, index: int) -> Iterator[Record]:
    """CoNLL-U blocks: the raw lines (comments too) up to a blank line; the task parses them."""
    rows: list[tuple[int, list[str]]] = []
    first = begin = end = 0
    bad = None
    for number, offset, raw in lines:
        text, why = decode(raw, offset)
        if why is None and not text.strip():
            if rows or bad:
                yield Record(index, first, begin, offset, rows=rows, bad=bad)
                index, rows, bad = index + 1, [], None
            end = offset + len(raw)
            continue
        if not rows and bad is None:
            first, begin = number, offset
        end = offset + len(raw)
        if why is not None:
            bad = bad or f"line {number}: {why}"
            continue
        rows.append((number, [text]))
    if rows or bad:
        yield Record(index, first, begin, end, rows=rows, bad=bad)


def _document_records(lines, index: int) -> Iterator[Record]:
    """CoNLL-2012 documents: the raw lines from ``#begin document`` to ``#end document`` (see
    :func:`iter_records`); the task parses them (:func:`bertkit.data.conll2012.parse_conll2012`)."""
    rows: list[tuple[int, list[str]]] = []
    first = begin = end = 0
    bad = None
    inside = False  # a #begin document opened the current record
    for number, offset, raw in lines:
        text, why = decode(raw, offset)
        head = text.strip() if why is None else ""
        if head.startswith("#begin document"):
            if rows or bad:  # the open one never ended (or stray lines): it ends here
                yield Record(index, first, begin, offset, rows=rows, bad=bad)
                index, rows, bad = index + 1, [], None
            inside = True
        elif not rows and bad is None:  # between documents
            if why is None and (not head or head.startswith("#")
                                and not head.startswith("#end document")):
                end = offset + len(raw)
                continue
            inside = False  # a line of no document: a record up to the next #begin
        if not rows and bad is None:
            first, begin = number, offset
        end = offset + len(raw)
        if why is not None:
            bad = bad or f"line {number}: {why}"
            continue
        rows.append((number, [text]))
        if inside and head.startswith("#end document"):
            yield Record(index, first, begin, end, rows=rows, bad=bad)
            index, rows, bad, inside = index + 1, [], None, False
    if rows or bad:
        yield Record(index, first, begin, end, rows=rows, bad=bad)


def _file_record(data: bytes, tell) -> Record:
    """The whole file as one record (``file``); ``bad`` names the line of an unreadable byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return Record(0, 1, 0, len(data), bad=f"line {line}: not valid UTF-8 at byte "
                      f"{exc.start} of the file", raw=tell())
    text = text[1:] if text.startswith("\ufeff") else text
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        return Record(0, 1, 0, len(data), bad=f"line {line}: binary data (NUL byte)", raw=tell())
    return Record(0, 1, 0, len(data), text, raw=tell())


TAG = re.compile(r"^(O|[BIES]-\S+)$")


def head_lines(path: str | Path, n: int = 200) -> list[str]:
    """The first ``n`` readable, non-blank lines of ``path`` that are not ``-DOCSTART-``."""
    out = []
    with open_binary(path) as handle:
        for number, raw in _head(handle, path):
            text, bad = decode(raw, 0 if number == 1 else 1)
            if bad is None and text.strip() and text.split()[0] != "-DOCSTART-" \
                    and not MARKER.match(text):
                out.append(text)
                if len(out) >= n:
                    break
    return out
