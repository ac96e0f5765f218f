"""CoNLL-style token/tag files: read, validate, convert to IOB2, write.

Format: one token a line, the token in the first column and the tag in the last, separated by tabs
(or, where a line has no tab, by spaces); two or more columns, as many on every token line as on
the first (CoNLL-2003, Tjong Kim Sang & De Meulder 2003: a fixed set of columns); a blank line
between sentences; ``-DOCSTART-`` lines and predict's ``# line N: empty`` markers end a
sentence; CRLF line ends and a UTF-8 byte-order mark accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from bertkit.data.tagging import Tag, detect_scheme, entity_openings, parse_tag, to_iob2
from bertkit.errors import BertkitError

MARKER = re.compile(r"^# line \d+: (empty|skipped\b)")
"""The comment line ``predict`` writes in CoNLL output for an input line without tokens (empty,
or skipped with ``--skip-bad-lines``); read back (by :func:`read_conll` and the streaming
readers), it is a sentence boundary, not a token."""


@dataclass
class Sentence:
    """One sentence: ``tokens`` (W words), IOB2 ``tags`` (W, or empty when unlabelled) and the
    1-based ``line`` of its first token in ``file`` (for error messages)."""

    tokens: list[str]
    tags: list[str] = field(default_factory=list)
    file: str = ""
    line: int = 0
    one_line: bool = False  # plain text: every word sits on ``line``

    def line_of(self, word: int) -> int:
        """1-based line of word ``word`` in ``file``."""
        return self.line if self.one_line else self.line + word


@dataclass
class ConllFile:
    """The sentences of one file, with the tagging scheme detected in it; ``stray``: the lines of
    an IOB2 file where an ``I-`` tag opens an entity (read as ``B-``, as conlleval reads it)."""

    path: Path
    sentences: list[Sentence]
    scheme: str
    stray: list[int] = field(default_factory=list)

    def stray_note(self, shown: int = 5) -> str | None:
        """A warning naming the stray ``I-`` lines (the first ``shown``, then a count)."""
        if not self.stray:
            return None
        more = f" and {len(self.stray) - shown} more" if len(self.stray) > shown else ""
        return (f"{self.path}: IOB2 tags with {len(self.stray)} stray I- tag(s) that open an "
                f"entity (IOB2 opens with B-), read as B- (conlleval's reading): line(s) "
                f"{', '.join(map(str, self.stray[:shown]))}{more}")


def read_lines(path: str | Path, *, old_mac: bool = True) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each line of a UTF-8 file, without line ends.

    Lines end at LF or CRLF. A lone CR inside a line stays in its text (one line, one record),
    except in a file with no LF at all, read as old Mac line ends (each CR ends a line) unless
    ``old_mac`` is False (``predict`` input: lines end only at LF/CRLF, always).

    Raises:
        BertkitError: the file does not exist, is a directory, or a line is not valid UTF-8
        (the message gives the line and byte offset).
    """
    path = Path(path)
    if not path.exists():
        raise BertkitError("file not found", file=path)
    if path.is_dir():
        raise BertkitError("is a directory", file=path, expected="a text file")
    offset, number, cr_lines = 0, 0, False
    with path.open("rb") as handle:
        for raw in handle:
            if number == 0:  # no LF after the first line: the whole file is this one read
                cr_lines = old_mac and not raw.endswith(b"\n")
            number += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BertkitError(
                    f"not valid UTF-8 at byte {offset + exc.start} of the file", file=path,
                    line=number, expected="UTF-8 text") from None
            if offset == 0:
                text = text.lstrip("\ufeff")
            if "\x00" in text:
                raise BertkitError("binary data (NUL byte)", file=path, line=number,
                                   expected="UTF-8 text")
            offset += len(raw)
            text = text.rstrip("\r\n")
            if cr_lines and "\r" in text:  # old Mac line ends (CR only): each CR ends a line
                parts = text.split("\r")
                for part in parts[:-1]:
                    yield number, part
                    number += 1
                text = parts[-1]
            yield number, text


def read_conll(path: str | Path, *, labelled: bool = True) -> ConllFile:
    """Read a CoNLL token/tag file and convert its tags to IOB2.

    Every token line must have as many columns as the first token line of the file (``-DOCSTART-``
    lines aside); a line with another count is an error naming it, as a line with one column
    among tagged lines would otherwise pass as untagged and a 3-column line among 2-column lines
    would read its second column as the tag.

    Args:
        path: the file.
        labelled: expect a tag column (two or more columns). If False, the file may instead have
            a single column on every line (tokens only, scheme ``"none"``); a file whose first
            token line has two or more columns is read with its tags and held to the same rules
            as a labelled one.

    Returns:
        the sentences with IOB2 tags, and the scheme detected in the file (IOB1, IOB2 or IOBES;
        ``"none"`` for a one-column file read with ``labelled=False``). A file whose entities
        open with ``B-`` more often than with ``I-`` is IOB2, its stray ``I-`` openings
        listed in ``stray`` (read as conlleval does, each opening an entity).

    Raises:
        BertkitError: missing file, bad encoding, a line with one column where tags are expected
            (``only one column``), a line whose column count differs from the first token line's,
            an empty tag, an unknown tag or scheme, an ``I-`` tag with no type, or a file with no
            sentences. Messages name file and line.
    """
    path = Path(path)
    sentences: list[Sentence] = []
    raw_tags: list[list[Tag]] = []
    tokens: list[str] = []
    tags: list[Tag] = []
    start = 0
    first: tuple[int, int] | None = None  # (columns, line) of the first token line

    def flush() -> None:
        if tokens:
            sentences.append(Sentence(list(tokens), [], str(path), start))
            raw_tags.append(list(tags))
            tokens.clear()
            tags.clear()

    for number, text in read_lines(path):
        if not text.strip():
            flush()
            continue
        if MARKER.match(text):  # predict's "# line N: empty" (its output read back)
            flush()
            continue
        cols = text.split("\t") if "\t" in text else text.split()
        cols = [c.strip() for c in cols]
        if cols[0] == "-DOCSTART-":
            flush()
            continue
        if first is None:
            first = (len(cols), number)
        tag = _token_line(cols, text, number, path, first, labelled)
        if tag is not None:
            tags.append(tag)
        if not tokens:
            start = number
        tokens.append(cols[0])
    flush()
    if not sentences:
        raise BertkitError("no sentences found", file=path,
                           expected="lines TOKEN<TAB>TAG with a blank line between sentences")
    if first is not None and first[0] == 1:  # tokens only (labelled=False)
        return ConllFile(path, sentences, "none")
    return _as_iob2(path, sentences, raw_tags)


def _token_line(cols: list[str], text: str, number: int, path: Path, first: tuple[int, int],
                labelled: bool) -> Tag | None:
    """Check a token line's columns against the file's first token line (``first``: its
    column count and line) and return its tag (None in a one-column file).

    Raises:
        BertkitError: an empty token, one column where tags are expected, another column count
            than the first token line's, or an empty or unknown tag.
    """
    if not cols[0]:
        raise BertkitError("empty token in the first column", file=path, line=number,
                           expected="TOKEN<TAB>TAG")
    width, where = first
    if len(cols) == 1 and (labelled or width > 1):
        want = "two or more columns" if width == 1 else \
            f"{width} columns as on line {where}, the first token line"
        raise BertkitError(f"only one column in {text.strip()!r}", file=path, line=number,
                           expected=f"{want}: TOKEN ... TAG")
    if len(cols) != width:
        raise BertkitError(f"{len(cols)} columns in {text.strip()!r}", file=path, line=number,
                           expected=f"{width} column{'s' if width > 1 else ''} as on line "
                                    f"{where}, the first token line")
    if width == 1:
        return None
    if not cols[-1]:
        raise BertkitError(f"empty tag (last column) in {text.strip()!r}", file=path,
                           line=number, expected="TOKEN ... TAG with a tag such as O")
    return parse_tag(cols[-1], file=str(path), line=number)


def _as_iob2(path: Path, sentences: list[Sentence], raw_tags: list[list[Tag]]) -> ConllFile:
    """Detect the file's scheme and set each sentence's IOB2 tags; an IOB1-looking file whose
    entities open with ``B-`` more often than with ``I-`` is IOB2 with stray ``I-`` openings.

    Raises:
        BertkitError: an unknown scheme (see :func:`~bertkit.data.tagging.to_iob2`).
    """
    scheme, stray = detect_scheme(raw_tags), []
    if scheme == "IOB1":  # mostly B- openings: IOB2 with a few stray I- tags (spaCy#2661)
        b_opens, i_opens = entity_openings(raw_tags)
        if b_opens > len(i_opens):
            scheme, stray = "IOB2", [sentences[s].line_of(w) for s, w in i_opens]
    for sentence, seq in zip(sentences, raw_tags):
        sentence.tags = to_iob2(seq, scheme)
    return ConllFile(path, sentences, scheme, stray)


def read_text(path: str | Path, pre_tokenize, empty: list[int] | None = None) -> list[Sentence]:
    """Read plain text, one sentence a line, splitting words with ``pre_tokenize``.

    Args:
        pre_tokenize: ``str -> list[(word, (char_start, char_end))]``, e.g. the BERT pre-tokeniser.
        empty: if given, the (1-based) numbers of the skipped lines are appended to it, so that
            a caller can give every input line an output record.

    Lines end only at LF or CRLF (a lone CR is white space inside its line). A line whose words
    are all control or zero-width characters is skipped as a blank line is (nothing to tag);
    elsewhere every word is kept, so every input word gets a tag.

    Returns:
        one unlabelled :class:`Sentence` per non-blank line (blank lines, and lines with nothing
        visible, are skipped).

    Raises:
        BertkitError: missing file, bad encoding, or no text at all.
    """
    from bertkit.data.text import visible

    out = []
    for number, text in read_lines(path, old_mac=False):
        words = [w for w, _ in pre_tokenize(text)]
        if not any(visible(w) for w in words):
            if empty is not None:
                empty.append(number)
            continue
        if words:
            out.append(Sentence(words, [], str(path), number, one_line=True))
    if not out:
        raise BertkitError("no text found", file=path, expected="one sentence a line")
    return out


def looks_like_conll(path: str | Path) -> bool:
    """Guess whether ``path`` is CoNLL (one token a line) rather than plain text (one sentence a line).

    CoNLL if the first 200 non-blank lines all hold a tab, or each is a single token or ends in a
    tag-like field (``O``, ``B-X``, ``I-X``, ...). ``-DOCSTART-`` lines (``-DOCSTART- (123)`` in
    EBM-NLP) are left out of the count.
    """
    lines = []
    for _, text in read_lines(path):
        if text.strip() and text.split()[0] != "-DOCSTART-":
            lines.append(text)
            if len(lines) >= 200:
                break
    return conll_lines(lines)


def conll_lines(lines: list[str]) -> bool:
    """:func:`looks_like_conll` on the first non-blank lines of a file (``-DOCSTART-`` left out).

    >>> conll_lines(["Aspirin\tB-Chemical", "induced\tO"]), conll_lines(["Aspirin induced it ."])
    (True, False)
    """
    if not lines:
        return False
    if all("\t" in t for t in lines):
        return True
    tag = re.compile(r"^(O|[BIES]-\S+)$")
    return all(len(t.split()) == 1 or tag.match(t.split()[-1]) for t in lines) and any(
        len(t.split()) > 1 for t in lines) or len(lines) > 1 and all(len(t.split()) == 1 for t in lines)


def format_conll(sentences: Iterable[Sentence], predictions: Iterable[list[str]]) -> str:
    """CoNLL text with columns token, gold (when known) and predicted tag; blank line between."""
    parts = []
    for sentence, pred in zip(sentences, predictions):
        rows = []
        for i, token in enumerate(sentence.tokens):
            cols = [token] + ([sentence.tags[i]] if sentence.tags else []) + [pred[i]]
            rows.append("\t".join(cols))
        parts.append("\n".join(rows) + "\n")
    return "\n".join(parts)
