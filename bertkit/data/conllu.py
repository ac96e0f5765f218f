"""CoNLL-U reading and writing for dependency parsing (Universal Dependencies v2 format).

Each sentence block is parsed with the ``conllu`` package; bertkit keeps the block's raw lines so
that writing predictions changes only HEAD (column 7) and DEPREL (column 8) of the word lines and
leaves everything else exactly as it came: comments, multiword-token lines (``3-4``), empty nodes
(``5.1``), the other columns and their spacing. Multiword tokens and empty nodes are kept out of
the word sequence the parser sees.

Malformed input (a word line without 10 tab-separated columns, a non-integer or out-of-range HEAD,
word ids not counting 1, 2, ..., a multiword range that does not cover the next words) raises a
:class:`~bertkit.errors.BertkitError` naming the file and line, and the sentence's ``sent_id``
when the block has one. Gold (labelled) sentences must also be trees (:func:`tree_problem`):
exactly one word attached to the root (HEAD 0), and every word reachable from it, so no cycle;
UD requires this of every sentence (format guidelines, "syntactic annotation"). A caller may skip
bad sentences instead (``skipped=``) and count them.

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


def tree_problem(heads: Sequence[int]) -> str | None:
    """What keeps gold ``heads`` from being a single-rooted dependency tree, or None for a tree.

    Args:
        heads: ``[n]`` ints, the head of word ``k+1`` (1-based word ids; 0 = the root), each
            already in ``0..n`` and not the word itself.

    Returns:
        None for a tree; else a short description: the root count (with the words attached to
        the root), or the cycle (``2 -> 3 -> 2``) and how many words the root cannot reach.

    >>> tree_problem([2, 0, 2])
    >>> tree_problem([0, 0, 2, 2])
    '2 roots (words 1, 2 have HEAD 0)'
    >>> tree_problem([0, 3, 2, 2])
    'the heads form a cycle 2 -> 3 -> 2; 3 word(s) not reachable from the root (2, 3, 4)'

    Reference:
        Universal Dependencies v2 guidelines, CoNLL-U format ("exactly one word with HEAD 0";
        the basic dependencies form a tree).
    """
    n = len(heads)
    roots = [k + 1 for k, h in enumerate(heads) if int(h) == 0]
    if len(roots) == 0:
        return "no root (no word with HEAD 0)"
    if len(roots) > 1:
        return f"{len(roots)} roots (words {', '.join(map(str, roots))} have HEAD 0)"
    state = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 reaches the root
    state[0] = 2
    cycle: list[int] | None = None
    unreachable: set[int] = set()
    for start in range(1, n + 1):
        path, w = [], start
        while state[w] == 0:
            state[w] = 1
            path.append(w)
            w = int(heads[w - 1])
        reaches = state[w] == 2  # else 1 (a new cycle on this path) or 3 (leads into one)
        if state[w] == 1 and cycle is None:
            cycle = path[path.index(w):]
        for v in path:
            state[v] = 2 if reaches else 3
        if not reaches:
            unreachable.update(path)
    if not unreachable:
        return None
    shown = " -> ".join(map(str, cycle + cycle[:1])) if cycle else "?"
    words = sorted(unreachable)
    return (f"the heads form a cycle {shown}; {len(words)} word(s) not reachable from the root "
            f"({', '.join(map(str, words[:20]))}{', ...' if len(words) > 20 else ''})")


def _sent_id(lines: list[str]) -> str | None:
    """The ``# sent_id = ...`` comment of a block, if any."""
    for line in lines:
        if line.startswith("#") and "=" in line:
            key, _, value = line[1:].partition("=")
            if key.strip() == "sent_id":
                return value.strip()
    return None


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


SKIP_HINT = "or --skip-bad-sentences to skip and count such sentences"


def _check_block(path: str, start: int, lines: list[str], labelled: bool) -> None:
    """Validate the word lines of one block (see module docstring); raise with file, line and
    the block's ``sent_id``."""
    sid = _sent_id(lines)

    def bad(message: str, line: int, expected: str) -> BertkitError:
        where = f" (sentence sent_id={sid})" if sid is not None else ""
        return BertkitError(message + where, file=path, line=line,
                            expected=f"{expected}; {SKIP_HINT}" if labelled else expected)

    n_words, range_end, range_line = 0, 0, start
    for k, line in enumerate(lines):
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise bad(f"{len(cols)} tab-separated column(s)", start + k,
                      "10 columns: ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC")
        tid = cols[0]
        if _RANGE.match(tid):
            first, last = map(int, tid.split("-"))
            if first != n_words + 1 or last <= first:
                raise bad(f"multiword range {tid} does not cover the next words", start + k,
                          f"a range {n_words + 1}-M with M > {n_words + 1}")
            range_end, range_line = last, start + k
            continue
        if _EMPTY.match(tid):
            continue
        if not _WORD.match(tid):
            raise bad(f"bad word id {tid!r}", start + k,
                      "an integer, a range such as 3-4, or an empty node 5.1")
        n_words += 1
        if int(tid) != n_words:
            raise bad(f"word id {tid} out of sequence", start + k, f"word id {n_words}")
    if n_words == 0:
        raise bad("sentence without words", start, "at least one line with an integer word id")
    if range_end > n_words:
        raise bad(f"multiword range ends at word {range_end} but the sentence has {n_words}",
                  range_line, f"a range within words 1-{n_words}")
    if not labelled:
        return
    heads = []
    for k, line in enumerate(lines):
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if not _WORD.match(cols[0]):
            continue
        head = cols[6]
        if not re.fullmatch(r"\d+", head):
            raise bad(f"HEAD {head!r} is not a number", start + k,
                      f"an integer from 0 to {n_words}")
        if int(head) > n_words or int(head) == int(cols[0]):
            raise bad(f"HEAD {head} out of range", start + k,
                      f"an integer from 0 to {n_words}, not the word itself")
        if cols[7] in ("", "_"):
            raise bad("DEPREL is empty", start + k, "a dependency relation")
        heads.append(int(head))
    problem = tree_problem(heads)
    if problem is not None:
        raise bad(f"gold heads are not a tree: {problem}", start,
                  "exactly one word with HEAD 0 and every word reachable from it")


def parse_conllu(text: str, path: str = "<input>", labelled: bool = True,
                 skipped: list[BertkitError] | None = None, first_line: int = 1
                 ) -> list[DepSentence]:
    """Parse CoNLL-U ``text`` into sentences (see module docstring).

    Args:
        labelled: require HEAD and DEPREL and a tree of gold heads (training and scoring); False
            accepts ``_`` there (input to ``predict``).
        skipped: when given, a malformed sentence (bad line, or gold heads that are not a tree)
            is left out and its error appended here instead of raised.
        first_line: the line number of ``text``'s first line in its file (a streamed block).

    Raises:
        BertkitError: malformed input (``skipped`` not given), naming ``path``, the line and the
            ``sent_id``.
    """
    out = []
    for start, lines in _blocks(text):
        start += first_line - 1
        try:
            _check_block(path, start, lines, labelled)
            try:
                tokens = conllu.parse("\n".join(lines) + "\n\n")[0]
            except Exception as exc:  # conllu raises several types; report them as input errors
                raise BertkitError(f"not valid CoNLL-U: {exc}", file=path, line=start) from None
        except BertkitError as exc:
            if skipped is None:
                raise
            skipped.append(exc)
            continue
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


def read_conllu(path: str | Path, labelled: bool = True,
                skipped: list[BertkitError] | None = None) -> list[DepSentence]:
    """Read a CoNLL-U file (UTF-8, BOM allowed). See :func:`parse_conllu` (``skipped`` too).

    Raises:
        BertkitError: missing, unreadable or malformed file (a malformed sentence only without
            ``skipped``), or a file without (good) sentences.
    """
    path = Path(path)
    if not path.is_file():
        raise BertkitError("file not found", file=path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise BertkitError("not UTF-8 text", file=path, line=line) from None
    n_skipped = len(skipped) if skipped is not None else 0
    sents = parse_conllu(text, str(path), labelled, skipped)
    if not sents:
        if skipped is not None and len(skipped) > n_skipped:
            raise BertkitError(f"no good sentences: all {len(skipped) - n_skipped} are malformed "
                               f"(first: {skipped[n_skipped]})", file=path,
                               expected="CoNLL-U sentences whose gold heads form trees")
        raise BertkitError("no sentences", file=path, expected="CoNLL-U word lines")
    return sents


def text_sentences(lines: Sequence[str], split, path: str = "<input>") -> list[DepSentence]:
    """Unlabelled sentences from plain text, one sentence a line (blank lines, and lines whose
    words are all control or zero-width characters, skipped); the ``# text`` comment has its
    white space (a lone CR, U+2028) made single spaces, so each sentence stays on its own lines
    of the CoNLL-U output.

    Args:
        split: ``str -> list of (word, offsets)`` pre-tokenizer (the tokenizer's), or ``str.split``.
    """
    from bertkit.data.text import visible

    out = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        words = [w if isinstance(w, str) else w[0] for w in split(line.strip())]
        if not any(visible(w) for w in words):
            continue
        text = " ".join(line.split())
        rows = [f"{k + 1}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_" for k, w in enumerate(words)]
        out.append(DepSentence(words, ["_"] * len(words), None, None,
                               [f"# text = {text}"] + rows,
                               np.arange(1, len(words) + 1, dtype=np.int64), path, no,
                               {"text": text}))
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
