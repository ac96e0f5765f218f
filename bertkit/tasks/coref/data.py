"""Coreference data: resolve ``--data`` to CoNLL-2012 documents per split, and read ``predict``
input (CoNLL-2012, plain text, JSON lines of documents).

A split is a file (``train.conll``, ``dev.conll``, ...; one or more documents) or a folder of
them (``train/*.conll``, one document a file, as LitBank is released); folders are read in file
name order.
"""

from __future__ import annotations

import re
from pathlib import Path

from bertkit.data.conll2012 import CorefDocument, read_conll2012
from bertkit.data.sets import _SPLIT_ALIASES, data_root, entry, missing_message, registered
from bertkit.errors import BertkitError

EXTENSIONS = (".conll", ".v4_gold_conll", ".gold_conll", ".conll2012")
LAYOUT = "coref/<name>/{train,dev,test}/*.conll"
# titles that never end a sentence before a name, for the few sentencex 1.0 misses ("Ms.") or
# misreads after a dash ("Then—Mrs. Hudson")
_TITLE_END = re.compile(r"(?<![A-Za-z])(?:Mr|Mrs|Ms|Mx|Dr|St)\.\s*$")


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


class CorefInputWarning(UserWarning):
    """A problem in coreference input that did not stop the reading (a trailing field, a gold
    span annotated twice: :attr:`~bertkit.data.conll2012.CorefDocument.notes`)."""


def load_documents(path: Path, labelled: bool = True, console=None) -> list[CorefDocument]:
    """Every document of a split (file or folder), its documents' notes shown on ``console``
    (:func:`~bertkit.tasks.common.warn_notes`), else as :class:`CorefInputWarning` (standard
    error in the CLI).

    Raises:
        BertkitError: as :func:`~bertkit.data.conll2012.read_conll2012`.
    """
    import warnings

    from bertkit.tasks.common import warn_notes

    docs = [doc for f in split_files(path) for doc in read_conll2012(f, labelled)]
    notes = [note for doc in docs for note in doc.notes]
    if console is not None:
        warn_notes(notes, console)
    else:
        for note in notes:
            warnings.warn(note, CorefInputWarning, stacklevel=2)
    return docs


def sentence_starts(text: str) -> list[int]:
    """Character offsets where the sentences of ``text`` start (``0`` first, sorted, each below
    ``len(text)``): blank lines, and the boundaries of sentencex (Wikimedia's rule-based
    segmenter with per-language abbreviation lists; English here), which knows that a title such
    as ``Mr.``, ``Mrs.``, ``Dr.`` or ``St.`` does not end a sentence, so "Mr. Holmes" stays one
    mention's worth of text (a mention lies inside one sentence). A boundary it puts right after
    ``Mr.``, ``Mrs.``, ``Ms.``, ``Mx.``, ``Dr.`` or ``St.`` (``Ms.`` is not in its list) is
    dropped.

    >>> t = "Mr. Holmes met Dr. Watson. They talked."
    >>> [t[i:i + 5] for i in sentence_starts(t)]
    ['Mr. H', 'They ']
    """
    import sentencex

    starts = {0}
    starts.update(m.end() for m in re.finditer(r"\n\s*\n", text))
    for b in sentencex.get_sentence_boundaries("en", text):
        if not _TITLE_END.search(text[max(0, b["start_index"] - 12):b["start_index"]]):
            starts.add(b["start_index"])
    # a sentence starts at its first non-space character (sentencex gives a blank line a piece)
    starts = {len(text) - len(text[i:].lstrip()) if text[i:i + 1].isspace() else i
              for i in starts}
    return sorted(i for i in starts | {0} if i < len(text))


def text_document(text: str, name: str, pre_tokenize) -> tuple[CorefDocument, list[tuple[int, int]]]:
    """A document from raw text: words by ``pre_tokenize(str) -> [(word, (start, end))]`` (the
    tokenizer's pre-tokenizer), sentences by :func:`sentence_starts` (titles and other
    abbreviations do not end a sentence; blank lines do).

    Returns:
        (the document, ``[W]`` character offsets ``(start, end)`` of each word in ``text``).
    """
    sentences, offsets = [], []
    bounds = sentence_starts(text) + [len(text)]
    for a, b in zip(bounds, bounds[1:]):
        words = [(w, (a + s, a + e)) for w, (s, e) in pre_tokenize(text[a:b])]
        if words:
            sentences.append([w for w, _ in words])
            offsets.extend(o for _, o in words)
    return CorefDocument(name, sentences), offsets


# a file named so is read as CoNLL-2012 (a missing #begin document is then an error naming the
# line, not a silent reading of the columns as plain text)
CONLL_SUFFIXES = (".conll", ".gold_conll", ".auto_conll", ".v4_gold_conll")
