"""CoNLL-U reading and writing for dependency parsing (Universal Dependencies v2 format).

Each sentence block is parsed with the ``conllu`` package; bertkit keeps the block's raw lines so
that writing predictions changes only HEAD (column 7) and DEPREL (column 8) of the word lines and
leaves everything else exactly as it came: comments, multiword-token lines (``3-4``), empty nodes
(``5.1``), the other columns and their spacing. Multiword tokens and empty nodes are kept out of
the word sequence the parser sees.

Malformed input (a word line without 10 tab-separated columns, a non-integer or out-of-range HEAD,
word ids not counting 1, 2, ..., a labelled sentence with no word attached to the root) raises a
:class:`~bertkit.errors.BertkitError` naming the file and line.

Reference: https://universaldependencies.org/format.html
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import conllu
import numpy as np

from bertkit.errors import BertkitError

_RANGE = re.compile(r"^\d+-\d+$")
_EMPTY = re.compile(r"^\d+\.\d+$")
_WORD = re.compile(r"^\d+$")


@dataclass
class DepSentence:
    """One CoNLL-U sentence. ``n`` = number of (syntactic) words.

    Attributes:
        words: the ``n`` word forms (FORM column of the integer-id lines).
        upos: the ``n`` UPOS values ("_" where absent).
        heads: ``[n]`` int64 gold heads (0 = root, k = word k, 1-based), or None when unlabelled.
        rels: the ``n`` gold relations (DEPREL), or None when unlabelled.
        lines: the block's raw lines (comments, word, multiword and empty-node lines).
        word_lines: ``[n]`` index in ``lines`` of each word's line.
        file: source file; ``line``: 1-based line number of the block's first line.
        metadata: the comments as parsed by ``conllu`` (``sent_id``, ``text``, ...).
    """

    words: list[str]
    upos: list[str]
    heads: np.ndarray | None
    rels: list[str] | None
    lines: list[str] = field(default_factory=list)
    word_lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    file: str = "<input>"
    line: int = 1
    metadata: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.words)

    def line_of(self, k: int) -> int:
        """1-based file line of word ``k`` (0-based word index)."""
        return self.line + int(self.word_lines[k]) if len(self.word_lines) else self.line


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """Split the file into sentence blocks: (1-based first line, lines), blank lines between."""
    out, cur, start = [], [], 1
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if line.strip() == "":
            if cur:
                out.append((start, cur))
            cur = []
            continue
        if not cur:
            start = no
        cur.append(line)
    if cur:
        out.append((start, cur))
    return out


def _check_block(path: str, start: int, lines: list[str], labelled: bool) -> None:
    """Validate the word lines of one block (see module docstring); raise with file and line."""
    n_words = 0
    for k, line in enumerate(lines):
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise BertkitError(f"{len(cols)} tab-separated column(s)", file=path, line=start + k,
                               expected="10 columns: ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL "
                                        "DEPS MISC")
        tid = cols[0]
        if _RANGE.match(tid) or _EMPTY.match(tid):
            continue
        if not _WORD.match(tid):
            raise BertkitError(f"bad word id {tid!r}", file=path, line=start + k,
                               expected="an integer, a range such as 3-4, or an empty node 5.1")
        n_words += 1
        if int(tid) != n_words:
            raise BertkitError(f"word id {tid} out of sequence", file=path, line=start + k,
                               expected=f"word id {n_words}")
    if n_words == 0:
        raise BertkitError("sentence without words", file=path, line=start,
                           expected="at least one line with an integer word id")
    if not labelled:
        return
    has_root = False
    for k, line in enumerate(lines):
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if not _WORD.match(cols[0]):
            continue
        head = cols[6]
        if not re.fullmatch(r"\d+", head):
            raise BertkitError(f"HEAD {head!r} is not a number", file=path, line=start + k,
                               expected=f"an integer from 0 to {n_words}")
        if int(head) > n_words or int(head) == int(cols[0]):
            raise BertkitError(f"HEAD {head} out of range", file=path, line=start + k,
                               expected=f"an integer from 0 to {n_words}, not the word itself")
        if cols[7] in ("", "_"):
            raise BertkitError("DEPREL is empty", file=path, line=start + k,
                               expected="a dependency relation")
        has_root |= int(head) == 0
    if not has_root:
        raise BertkitError("sentence has no root (no word with HEAD 0)", file=path, line=start,
                           expected="exactly one word attached to the root")


def parse_conllu(text: str, path: str = "<input>", labelled: bool = True) -> list[DepSentence]:
    """Parse CoNLL-U ``text`` into sentences (see module docstring).

    Args:
        labelled: require HEAD and DEPREL (training and scoring); False accepts ``_`` there
            (input to ``predict``).

    Raises:
        BertkitError: malformed input, naming ``path`` and the line.
    """
    out = []
    for start, lines in _blocks(text):
        _check_block(path, start, lines, labelled)
        try:
            tokens = conllu.parse("\n".join(lines) + "\n\n")[0]
        except Exception as exc:  # conllu raises several types; report them as input errors
            raise BertkitError(f"not valid CoNLL-U: {exc}", file=path, line=start) from None
        word_lines = np.asarray([k for k, ln in enumerate(lines)
                                 if not ln.startswith("#") and _WORD.match(ln.split("\t")[0])],
                                dtype=np.int64)
        words = [t for t in tokens if isinstance(t["id"], int)]
        heads = rels = None
        if labelled:
            heads = np.asarray([t["head"] for t in words], dtype=np.int64)
            rels = [t["deprel"] for t in words]
        out.append(DepSentence([t["form"] for t in words], [t["upos"] or "_" for t in words],
                               heads, rels, list(lines), word_lines, path, start,
                               dict(tokens.metadata)))
    return out


def read_conllu(path: str | Path, labelled: bool = True) -> list[DepSentence]:
    """Read a CoNLL-U file (UTF-8, BOM allowed). See :func:`parse_conllu`.

    Raises:
        BertkitError: missing, unreadable or malformed file, or a file without sentences.
    """
    path = Path(path)
    if not path.is_file():
        raise BertkitError("file not found", file=path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise BertkitError("not UTF-8 text", file=path, line=line) from None
    sents = parse_conllu(text, str(path), labelled)
    if not sents:
        raise BertkitError("no sentences", file=path, expected="CoNLL-U word lines")
    return sents


def text_sentences(lines: Sequence[str], split, path: str = "<input>") -> list[DepSentence]:
    """Unlabelled sentences from plain text, one sentence a line (blank lines skipped).

    Args:
        split: ``str -> list of (word, offsets)`` pre-tokenizer (the tokenizer's), or ``str.split``.
    """
    out = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        words = [w if isinstance(w, str) else w[0] for w in split(line.strip())]
        rows = [f"{k + 1}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_" for k, w in enumerate(words)]
        out.append(DepSentence(words, ["_"] * len(words), None, None,
                               [f"# text = {line.strip()}"] + rows,
                               np.arange(1, len(words) + 1, dtype=np.int64), path, no,
                               {"text": line.strip()}))
    return out


def format_conllu(sentences: Sequence[DepSentence], heads: Sequence[np.ndarray] | None = None,
                  rels: Sequence[Sequence[str]] | None = None) -> str:
    """CoNLL-U text of ``sentences`` with HEAD and DEPREL replaced by ``heads``/``rels``.

    Every other byte of each block is written as read; ``heads=None`` writes the blocks unchanged
    (a round trip). Sentences end with a blank line.
    """
    parts = []
    for i, s in enumerate(sentences):
        lines = list(s.lines)
        if heads is not None:
            for k, idx in enumerate(s.word_lines):
                cols = lines[idx].split("\t")
                cols[6] = str(int(heads[i][k]))
                cols[7] = rels[i][k] if rels is not None else cols[7]
                lines[idx] = "\t".join(cols)
        parts.append("\n".join(lines) + "\n\n")
    return "".join(parts)
