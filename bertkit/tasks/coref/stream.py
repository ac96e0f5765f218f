"""``predict coref`` through the shared streaming driver (:mod:`bertkit.predict`): a record is
one document, resolved whole, a chunk of documents (``--chunk-size``, 16:
:data:`~bertkit.tasks.coref.config.PREDICT_CHUNK`) at a time, each with the
text ``predict coref`` has always written for it (:func:`~bertkit.tasks.coref.task.predict_coref`
reads the whole file and gives the same bytes).

* CoNLL-2012: a ``#begin document`` ... ``#end document`` block (lines between documents, blank
  or comments, are no records). A malformed document is a bad record, named by file and the
  line of its ``#begin document`` with the reader's message and line
  (:func:`~bertkit.data.conll2012.parse_conll2012`): brackets of the coreference column that do
  not balance (a placeholder column such as ``_`` is ignored), a document without ``#end
  document`` (it ends where the next begins), no tokens, a token line outside a document.
* JSON lines: one document a line (``text``, optional ``id``; without one it is ``doc{N}``, N
  the 0-based line number); a blank line gives nothing.
* Plain text: the whole file is one document (blank lines are paragraph breaks inside it, as
  ``predict coref`` has always read it); many documents go in as JSON lines or CoNLL-2012.

With ``--skip-bad-lines`` a bad document gives ``{"line": N, "skipped": reason}`` in JSON-lines
output and a comment line ``# line N: skipped: reason`` between documents in CoNLL-2012 output
(CoNLL-2012 readers, the reference scorer's too, ignore comment lines outside documents).
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from bertkit.data.conll2012 import CorefDocument, format_conll2012, parse_conll2012
from bertkit.errors import BertkitError
from bertkit.predict.driver import StreamPredictor
from bertkit.predict.records import Record, open_binary
from bertkit.tasks.coref.data import CONLL_SUFFIXES, text_document
from bertkit.tasks.coref.inference import format_jsonl, loaded, resolve_documents, word_splitter

KINDS = {"conll": "conll2012", "text": "file", "jsonl": "jsonl"}
"""The record kind (:mod:`bertkit.predict.records`) of each input format."""
EXPECTED = {"conll": "CoNLL-2012 documents: #begin document (NAME); part N, token lines, "
                     "#end document",
            "text": "UTF-8 text (the whole file one document)",
            "jsonl": 'one JSON object a line, {"id": ..., "text": "..."}'}


def _name(path: str) -> str:
    """The input's name without ``.gz``."""
    return path[:-3] if path.endswith(".gz") else path


def stream_format(input_path: str, input_format: str = "auto") -> str:
    """``conll``, ``text`` or ``jsonl``; ``auto`` as ``predict coref`` has always chosen: CoNLL-2012
    when the first non-blank line starts with ``#begin document`` or the name ends in a CoNLL
    suffix, JSON lines when the name ends in ``.jsonl`` or that line starts with ``{``, else
    text (the name less ``.gz``; the first line within 64 KiB).

    Raises:
        BertkitError: an unknown format, or a missing input.
    """
    if input_format not in ("auto", "conll", "text", "jsonl"):
        raise BertkitError(f"unknown input format '{input_format}'",
                           expected="auto, conll, text or jsonl")
    if input_format != "auto":
        return input_format
    with open_binary(input_path) as handle:
        head = handle.read(1 << 16).decode("utf-8", errors="replace").lstrip("\ufeff")
    first = next((t for t in head.split("\n") if t.strip()), "")
    suffix = Path(_name(input_path)).suffix
    if first.startswith("#begin document") or suffix in CONLL_SUFFIXES:
        return "conll"
    return "jsonl" if suffix == ".jsonl" or first.lstrip().startswith("{") else "text"


def output_jsonl(output_format: str, output: str | None, fmt: str) -> bool:
    """Whether the output is JSON lines: asked for, or ``auto`` with an output (or input) name
    ending in ``.jsonl`` (``.jsonl.gz`` too).

    Raises:
        BertkitError: an unknown output format.
    """
    if output_format not in ("auto", "conll", "jsonl"):
        raise BertkitError(f"unknown output format '{output_format}'",
                           expected="auto, conll or jsonl")
    return output_format == "jsonl" or (output_format == "auto" and (
        _name(str(output or "")).endswith(".jsonl") or fmt == "jsonl"))


def read_record(rec: Record, fmt: str, path: str, pre_tokenize
                ) -> tuple[CorefDocument, str | None, list | None] | str | None:
    """A record as ``(document, text, word offsets)`` (text and offsets None for CoNLL-2012),
    None for a blank JSON line, or why it cannot be read (a ``str``, naming the line).
    """
    if fmt == "conll":
        lines = [(number, cols[0]) for number, cols in rec.rows]
        try:
            (doc,) = parse_conll2012(lines, path, labelled=False, brackets=True)
        except BertkitError as exc:
            at = "" if exc.line in (None, rec.line) else f"line {exc.line}: "
            return at + exc.message
        return doc, None, None
    if fmt == "text":
        name = Path(_name(path)).stem
        text = rec.text.replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
    else:
        if not rec.text.strip():
            return None
        if rec.value is None:
            return rec.bad or "not a JSON object"
        if not isinstance(rec.value.get("text"), str):
            return "no 'text' string"
        name, text = str(rec.value.get("id", f"doc{rec.line - 1}")), rec.value["text"]
    doc, offsets = text_document(text, name, pre_tokenize)
    if not doc.sentences:
        return "empty document (no words)"
    return doc, text, offsets


def coref_predictor(model_dir: str, input_path: str, input_format: str = "auto",
                    output_format: str = "auto", output: str | None = None,
                    device: str = "auto", precision: str = "auto",
                    console: Console | None = None) -> StreamPredictor:
    """The :class:`~bertkit.predict.driver.StreamPredictor` of a saved coreference model.

    Args:
        output: the output's name (for ``auto`` output format; None: standard output).

    Raises:
        BertkitError: unknown formats, or no saved model in ``model_dir``.
    """
    fmt = stream_format(input_path, input_format)
    as_jsonl = output_jsonl(output_format, output, fmt)
    model, meta, tokenizer, runtime, max_length = loaded(model_dir, device, precision, console)
    pre_tokenize = word_splitter(tokenizer)
    singletons = meta.get("singletons", "on") == "on"

    def check(rec: Record) -> str | None:
        got = read_record(rec, fmt, input_path, pre_tokenize)
        if isinstance(got, str):
            return got
        rec.item = got
        return None

    def predict(records: list[Record]) -> list[str | None]:
        items = [r.item for r in records if r.item is not None]
        clusters = iter(resolve_documents(model, tokenizer, [d for d, _, _ in items], runtime,
                                          max_length, 1, singletons) if items else [])
        out: list[str | None] = []
        for r in records:
            if r.item is None:
                out.append(None)
                continue
            doc, text, offsets = r.item
            cl = next(clusters)
            out.append(format_jsonl([doc], [cl], None if text is None else [text],
                                    None if text is None else [offsets]) if as_jsonl else
                       format_conll2012([doc], [cl]))
        return out

    def skipped(rec: Record) -> str:
        if as_jsonl:
            return json.dumps({"line": rec.line, "skipped": rec.bad}, ensure_ascii=False) + "\n"
        return f"# line {rec.line}: skipped: {rec.bad}\n"

    return StreamPredictor(
        KINDS[fmt], predict, meta["path"], unit="documents", check=check,
        expected=EXPECTED[fmt], skipped=skipped,
        settings={"task": "coref", "input": fmt, "output": "jsonl" if as_jsonl else "conll"})
