"""Coreference data: resolve ``--data`` to CoNLL-2012 documents per split, and read ``predict``
input (CoNLL-2012, plain text, JSON lines of documents).

A split is a file (``train.conll``, ``dev.conll``, ...; one or more documents) or a folder of
them (``train/*.conll``, one document a file, as LitBank is released); folders are read in file
name order.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bertkit.data.conll2012 import CorefDocument, parse_conll2012, read_conll2012
from bertkit.data.sets import _SPLIT_ALIASES, data_root, entry, missing_message, registered
from bertkit.errors import BertkitError

EXTENSIONS = (".conll", ".v4_gold_conll", ".gold_conll", ".conll2012")
LAYOUT = "coref/<name>/{train,dev,test}/*.conll"
_SENT_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘(\[]?[A-Z0-9])")


def _split_path(directory: Path, split: str) -> Path | None:
    found = [directory / f"{stem}{ext}" for stem in _SPLIT_ALIASES[split] for ext in EXTENSIONS]
    found = [p for p in found if p.is_file()]
    found += [directory / stem for stem in _SPLIT_ALIASES[split] if (directory / stem).is_dir()]
    if len(found) > 1:
        raise BertkitError(f"{len(found)} {split} splits: " + ", ".join(p.name for p in found),
                           file=directory, expected=f"one {split} file or folder")
    return found[0] if found else None


def split_files(path: Path) -> list[Path]:
    """The CoNLL-2012 files of a split (a file, or a folder's files by name).

    Raises:
        BertkitError: a folder without any.
    """
    if path.is_file():
        return [path]
    files = sorted(p for p in path.iterdir() if p.suffix in EXTENSIONS and p.is_file())
    if not files:
        raise BertkitError("no CoNLL-2012 files in the folder", file=path,
                           expected="files ending in " + " or ".join(EXTENSIONS))
    return files


def resolve_coref(data: str, splits: tuple[str, ...]) -> dict[str, Path]:
    """``{split: file or folder}`` of ``data`` (a directory or a registered name).

    Raises:
        BertkitError: neither a directory nor a registered set, the set not under
            ``$BERTKIT_DATA``, a split missing or given twice.
    """
    path = Path(data).expanduser()
    if path.is_dir():
        directory = path
    elif entry("coref", data) is not None:
        root = data_root()
        if root is None or not (root / "coref" / data).is_dir():
            raise BertkitError(missing_message("coref", data, LAYOUT))
        directory = root / "coref" / data
    else:
        raise BertkitError(f"'{data}' is neither a directory nor a registered coref data set",
                           expected="a directory with train/dev/test .conll files or folders, "
                                    "or one of: " + (", ".join(registered("coref")) or "none"))
    out = {}
    for split in splits:
        found = _split_path(directory, split)
        if found is None:
            raise BertkitError(f"no {split} split", file=directory,
                               expected=f"{split}.conll or a {split}/ folder of .conll files")
        out[split] = found
    return out


def load_documents(path: Path, labelled: bool = True) -> list[CorefDocument]:
    """Every document of a split (file or folder).

    Raises:
        BertkitError: as :func:`~bertkit.data.conll2012.read_conll2012`.
    """
    return [doc for f in split_files(path) for doc in read_conll2012(f, labelled)]


def text_document(text: str, name: str, pre_tokenize) -> tuple[CorefDocument, list[tuple[int, int]]]:
    """A document from raw text: words by ``pre_tokenize(str) -> [(word, (start, end))]`` (the
    tokenizer's pre-tokenizer), sentences split after ``.``, ``!``, ``?`` followed by space and a
    capital or digit, and at blank lines.

    Returns:
        (the document, ``[W]`` character offsets ``(start, end)`` of each word in ``text``).
    """
    sentences, offsets = [], []
    bounds = [0]
    for m in re.finditer(r"\n\s*\n", text):
        bounds.append(m.end())
    for m in _SENT_END.finditer(text):
        bounds.append(m.end())
    bounds = sorted(set(bounds))
    bounds.append(len(text))
    for a, b in zip(bounds, bounds[1:]):
        words = [(w, (a + s, a + e)) for w, (s, e) in pre_tokenize(text[a:b])]
        if words:
            sentences.append([w for w, _ in words])
            offsets.extend(o for _, o in words)
    return CorefDocument(name, sentences), offsets


# a file named so is read as CoNLL-2012 (a missing #begin document is then an error naming the
# line, not a silent reading of the columns as plain text)
CONLL_SUFFIXES = (".conll", ".gold_conll", ".auto_conll", ".v4_gold_conll")


def read_predict_input(path: Path, input_format: str, pre_tokenize
                       ) -> tuple[list[CorefDocument], list[str] | None, list | None, str]:
    """Read ``predict`` input.

    Returns:
        (documents, their texts or None for CoNLL input, word offsets per document or None,
        the format read: ``conll``, ``text`` or ``jsonl``).

    Raises:
        BertkitError: missing file, bad CoNLL-2012 or JSON line (file and line), no document.
    """
    from bertkit.data.conll import read_lines

    if not path.is_file():
        raise BertkitError("input file not found", file=path)
    fmt = input_format
    if fmt == "auto":
        first = next((t for _, t in read_lines(path, old_mac=False) if t.strip()), "")
        conll = first.startswith("#begin document") or path.suffix in CONLL_SUFFIXES
        fmt = ("conll" if conll else
               "jsonl" if path.suffix == ".jsonl" or first.lstrip().startswith("{") else "text")
    if fmt == "conll":  # a filled-in coreference column must balance, as when streaming
        return parse_conll2012(read_lines(path), path, False, brackets=True), None, None, fmt
    docs, texts, offsets = [], [], []
    if fmt == "text":
        text = path.read_text(encoding="utf-8-sig")
        items = [(path.stem, text, None)]
    else:
        items = []
        for line_no, line in read_lines(path, old_mac=False):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BertkitError(f"not JSON: {exc.msg}", file=path, line=line_no,
                                   expected='one JSON object a line, {"id": ..., "text": ...}'
                                   ) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise BertkitError("no 'text' string", file=path, line=line_no,
                                   expected='{"id": ..., "text": "..."}')
            items.append((str(obj.get("id", f"doc{line_no - 1}")), obj["text"], line_no))
    for name, text, line_no in items:
        doc, offs = text_document(text, name, pre_tokenize)
        if not doc.sentences:
            raise BertkitError("empty document (no words)", file=path, line=line_no,
                               expected="some text")
        docs.append(doc)
        texts.append(text)
        offsets.append(offs)
    if not docs:
        raise BertkitError("no documents", file=path, expected="some text")
    return docs, texts, offsets, fmt
