"""CoNLL-2012 coreference files: read documents with their clusters, write them back.

The format (Pradhan et al., 2012, the CoNLL-2012 shared task; the reference scorer of Pradhan
et al., 2014 reads it the same way):

* ``#begin document (NAME); part NNN`` opens a document, ``#end document`` closes it; other
  lines starting with ``#`` are comments.
* one token a line; columns separated by tabs (or, in the scorer's own test files, by runs of
  spaces); a blank line ends a sentence.
* the **last** column holds the coreference chains: ``(7`` opens a mention of entity 7, ``7)``
  closes the most recently opened mention of 7, ``(7)`` is a one-token mention, several are
  joined by ``|`` (or run together: ``(1(3``, ``3)1)``); ``-`` (or, as in LitBank's files, an empty last field) means none.
* the word is in column 4 (index 3) when a line has at least 5 columns (CoNLL-2012, LitBank),
  else the first column that is not the coreference column (the scorer's 2-column test files
  carry no word, so the document name stands in).

Mentions are ``(start, end)`` token indices within the document, both inclusive, counted over
the whole document (sentences only matter for the model and for writing back).

Errors (each a :class:`~bertkit.errors.BertkitError` naming the file and line): brackets that do
not balance (a mention opened and never closed, reported at its opening line), a mention that
closes an entity never opened, a document without its ``#end document`` line (or a token line
outside any document), an empty document, a coreference column in the wrong place (a token line
whose last field is not a coreference annotation while another field of it is one; the message
gives the line's field count beside its document's).

Notes (:attr:`CorefDocument.notes`, shown by the caller; the reading goes on): token lines with
more fields than the rest of their document whose extra fields are empty (a trailing tab, as
some annotation tools write; the coreference is read from the document's usual last field, so
their mentions are kept), and a gold span annotated twice (counted once, in its first entity;
see :func:`_repeated_spans` for the reference scorer's behaviour).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from bertkit.errors import BertkitError

_BEGIN = re.compile(r"^#begin document\s*(.*)$")
_PART = re.compile(r"^\((.*)\);\s*part\s*(\S+)\s*$")
_ITEM = re.compile(r"(\()?(\d+)(\))?")
# the whole field: items joined by "|" or, as in the reference scorer's own files, run together
_FIELD = re.compile(r"^(?:\(\d+\)|\(\d+|\d+\))(?:\|?(?:\(\d+\)|\(\d+|\d+\)))*$")
EXPECTED_COREF = "'-', empty, or '(N', 'N)', '(N)' joined by '|'"


@dataclass
class CorefDocument:
    """One CoNLL-2012 document.

    Attributes:
        name: the document name of its ``#begin document`` line (with ``; part N`` when given).
        sentences: words per sentence (``list[list[str]]``).
        clusters: mentions per entity, each ``(start, end)`` document token indices (inclusive),
            entities in order of first mention, mentions sorted; None for an unlabelled document.
        file / begin_line: where it came from (for messages); ``token_lines[i]`` is the line of
            token ``i`` (empty for documents not read from a file).
        rows: per token the original line's fields (the writer keeps every column but the last;
            empty fields after a document's usual count, a trailing tab, dropped).
        notes: warnings about the input that did not stop the reading (a trailing field, a gold
            span annotated twice), each naming the file and line, for the caller to show.
    """

    name: str
    sentences: list[list[str]]
    clusters: list[list[tuple[int, int]]] | None = None
    file: str = "<memory>"
    begin_line: int = 0
    token_lines: list[int] = field(default_factory=list)
    rows: list[list[str]] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def line(self) -> int:
        """The ``#begin document`` line (where messages point)."""
        return self.begin_line

    @property
    def words(self) -> list[str]:
        """All words of the document in order (``W`` of them)."""
        return [w for s in self.sentences for w in s]

    def sentence_ids(self) -> list[int]:
        """``[W]`` the sentence index of each token."""
        return [k for k, s in enumerate(self.sentences) for _ in s]


def _coref_field(fields: list[str]) -> tuple[str, bool]:
    """The coreference annotation of a token line and whether it parses."""
    last = fields[-1].strip()
    if last in ("", "-"):
        return last, True
    return last, bool(_FIELD.match(last))


def _split(line: str) -> list[str]:
    return line.split("\t") if "\t" in line else line.split()


def read_conll2012(path: str | Path, labelled: bool = True) -> list[CorefDocument]:
    """Read every document of a CoNLL-2012 file (:func:`parse_conll2012` of its lines).

    Args:
        path: the file (UTF-8).
        labelled: False ignores the coreference column (``clusters`` None): predict input.

    Returns:
        the documents in file order.

    Raises:
        BertkitError: see the module docstring; also a missing or non-UTF-8 file.

    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".conll", delete=False)
    >>> _ = f.write("#begin document (d); part 0\\nd\\t0\\t0\\tAnn\\t(0)\\nd\\t0\\t1\\tsaw\\t-\\n"
    ...             "d\\t0\\t2\\therself\\t(0)\\n#end document\\n"); f.close()
    >>> read_conll2012(f.name)[0].clusters
    [[(0, 0), (2, 2)]]
    >>> os.unlink(f.name)
    """
    from bertkit.data.conll import read_lines

    return parse_conll2012(read_lines(path), path, labelled)


def parse_conll2012(lines: Iterable[tuple[int, str]], path: str | Path, labelled: bool = True,
                    brackets: bool = False) -> list[CorefDocument]:
    """The documents of CoNLL-2012 ``lines`` (``(line number, text)``, as
    :func:`~bertkit.data.conll.read_lines` gives them), e.g. one document's lines of a stream.

    A token line with more fields than most token lines of its document whose extra fields are
    all empty (a trailing tab; on every line too, :func:`_usual_width`) has its coreference read
    from the last non-empty field, where the other lines have it, and a note says so (:attr:`CorefDocument.notes`); a gold span annotated
    twice gets a note too (:func:`_repeated_spans`).

    Args:
        path: the file the lines come from (for messages).
        labelled: False ignores the coreference column (``clusters`` None): predict input.
        brackets: with ``labelled`` False, still check that a last column holding a coreference
            annotation balances (a placeholder such as ``_`` is ignored): a predict input's
            broken gold column says the file is not what it seems.

    Returns:
        the documents in order.

    Raises:
        BertkitError: as :func:`read_conll2012`.
    """
    path = Path(path)
    docs: list[CorefDocument] = []
    doc: CorefDocument | None = None
    pending: list[tuple[int, list[str]] | None] = []  # token lines; None: a sentence break

    for line_no, text in lines:
        stripped = text.strip()
        if stripped.startswith("#begin document"):
            if doc is not None:
                raise BertkitError(f"#begin document before document {doc.name!r} ended",
                                   file=path, line=line_no, expected="#end document first")
            header = _BEGIN.match(stripped).group(1).strip()
            m = _PART.match(header)
            name = f"{m.group(1)}; part {m.group(2)}" if m else header.strip("();") or "doc"
            doc = CorefDocument(name, [], file=str(path), begin_line=line_no, rows=[])
            pending = []
            continue
        if stripped.startswith("#end document"):
            if doc is None:
                raise BertkitError("#end document without #begin document", file=path,
                                   line=line_no, expected="#begin document (NAME); part N first")
            docs.append(_document(doc, pending, path, labelled, brackets))
            doc = None
            continue
        if stripped.startswith("#"):
            continue
        if not stripped:
            if doc is not None:
                pending.append(None)
            continue
        if doc is None:
            raise BertkitError("token line outside a document", file=path, line=line_no,
                               expected="#begin document (NAME); part N before it")
        pending.append((line_no, _split(text.rstrip("\r\n"))))
    if doc is not None:
        raise BertkitError(f"document {doc.name!r} has no #end document line", file=path,
                           line=doc.begin_line, expected="#end document after its last token")
    if not docs:
        raise BertkitError("no documents", file=path, expected="#begin document (NAME); part N "
                           "... #end document")
    return docs


def _usual_width(pending: list[tuple[int, list[str]] | None]) -> int:
    """The number of fields up to the coreference column on a document's token lines: what most
    of them have (ties: the smaller), less one where that last field is empty on every line and
    the field before it holds a coreference annotation on some line (a trailing tab on every
    line; LitBank's own empty last field, "no mention", never sits after an annotation)."""
    rows = [item[1] for item in pending if item is not None]
    counts = Counter(len(f) for f in rows)
    if not counts:
        return 0
    width = min(counts, key=lambda n: (-counts[n], n))
    full = [f for f in rows if len(f) >= width]
    if width > 2 and not any(f[width - 1].strip() for f in full) and any(
            _FIELD.match(f[width - 2].strip()) for f in full):
        width -= 1
    return width


def _document(doc: CorefDocument, pending: list[tuple[int, list[str]] | None], path: Path,
              labelled: bool, brackets: bool) -> CorefDocument:
    """Fill ``doc`` from its token lines (``pending``, None between sentences): words, rows,
    clusters (when ``labelled``) and notes."""
    width = _usual_width(pending)
    chains = _Chains()
    widened: list[tuple[int, int]] = []  # (line, fields) of lines with empty extra fields
    sentence: list[str] = []
    for item in pending:
        if item is None:
            if sentence:
                doc.sentences.append(sentence)
                sentence = []
            continue
        line_no, fields = item
        if len(fields) > width >= 2 and not any(f.strip() for f in fields[width:]):
            widened.append((line_no, len(fields)))
            fields = fields[:width]  # a trailing tab: the coreference field is the last real one
        last, ok = _check_row(doc, fields, line_no, width, path, labelled)
        word = fields[3] if len(fields) >= 5 else fields[0]
        index = sum(len(s) for s in doc.sentences) + len(sentence)
        sentence.append(word)
        doc.token_lines.append(line_no)
        doc.rows.append(fields)
        if not (labelled or brackets and ok) or last in ("", "-"):
            continue
        chains.read(last, index, line_no, path)
    if sentence:
        doc.sentences.append(sentence)
    if not doc.sentences:
        raise BertkitError(f"document {doc.name!r} has no tokens", file=path,
                           line=doc.begin_line, expected="token lines between #begin "
                           "document and #end document")
    chains.check_closed(doc, path)
    if widened:
        doc.notes.append(_widened_note(doc, widened, width, path))
    if labelled:
        doc.notes.extend(_repeated_spans(doc, chains.clusters, chains.first_open, path))
        # entities in order of their first mention, ties by which opened first
        doc.clusters = [sorted(m) for _, m in sorted(
            chains.clusters.items(), key=lambda kv: (min(kv[1]), chains.first_open[kv[0]]))]
    return doc


def _check_row(doc: CorefDocument, fields: list[str], line_no: int, width: int, path: Path,
               labelled: bool) -> tuple[str, bool]:
    """Check a token line's layout against its document's (``width``: the usual field count)
    and return its coreference field and whether it reads as one.

    Raises:
        BertkitError: one column, the word's column elsewhere than on the document's first
            token line, or (``labelled``) a last field that is no coreference annotation.
    """
    if len(fields) < 2:
        raise BertkitError("token line with one column", file=path, line=line_no,
                           expected="columns with the coreference column last")
    if doc.rows and (len(fields) >= 5) != (len(doc.rows[0]) >= 5):  # the word's column
        raise BertkitError(f"token line with {len(fields)} columns where line "
                           f"{doc.token_lines[0]} of document {doc.name!r} has "
                           f"{len(doc.rows[0])}", file=path, line=line_no,
                           expected="the same layout on every token line of a document "
                           "(the word in column 4 of 5 or more, else in column 1)")
    last, ok = _coref_field(fields)
    if labelled and not ok:
        elsewhere = any(_coref_field([f])[1] and f.strip() not in ("", "-")
                        for f in fields[4:-1])
        where = " (a coreference annotation sits in another column)" if elsewhere else ""
        counts = (f"; this line has {len(fields)} fields, most token lines of document "
                  f"{doc.name!r} {width}" if len(fields) != width else "")
        raise BertkitError(f"last column {last!r} is not a coreference annotation{where}"
                           f"{counts}", file=path, line=line_no,
                           expected=EXPECTED_COREF + " in the last column")
    return last, ok


@dataclass
class _Chains:
    """A document's coreference brackets as they are read: ``open_`` (entity -> stack of
    (start token, line) of its open mentions), ``clusters`` (entity -> closed mentions
    ``(start, end)``, both inclusive) and ``first_open`` (entity -> order of its first opening
    in the document)."""

    open_: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    clusters: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    first_open: dict[int, int] = field(default_factory=dict)

    def read(self, last: str, index: int, line_no: int, path: Path) -> None:
        """Read the coreference field ``last`` of token ``index`` (on line ``line_no``).

        Raises:
            BertkitError: a bracket closes an entity with no open mention.
        """
        for found in _ITEM.finditer(last):
            part = found.group(0)
            opens, entity, closes = found.groups()
            entity = int(entity)
            self.first_open.setdefault(entity, len(self.first_open))
            if opens and closes:
                self.clusters.setdefault(entity, []).append((index, index))
            elif opens:
                self.open_.setdefault(entity, []).append((index, line_no))
            else:
                stack = self.open_.get(entity)
                if not stack:
                    raise BertkitError(f"'{part}' closes a mention of entity {entity}, which is "
                                       f"not open", file=path, line=line_no,
                                       expected=f"'({entity}' on this or an earlier line")
                start, _ = stack.pop()
                self.clusters.setdefault(entity, []).append((start, index))

    def check_closed(self, doc: CorefDocument, path: Path) -> None:
        """At the end of ``doc``: every opened mention was closed.

        Raises:
            BertkitError: at the line of the first mention left open (brackets do not balance).
        """
        for entity, stack in self.open_.items():
            if stack:
                start, at = stack[0]
                raise BertkitError(f"mention of entity {entity} opened here is never closed "
                                   f"(brackets do not balance)", file=path, line=at,
                                   expected=f"a '{entity})' later in document {doc.name!r}")


def _widened_note(doc: CorefDocument, widened: list[tuple[int, int]], width: int,
                  path: Path) -> str:
    """The note on ``doc``'s token lines (``widened``: line and field count) that end in empty
    fields after the usual ``width``."""
    shown = ", ".join(f"line {n} ({k} fields)" for n, k in widened[:5])
    more = f" and {len(widened) - 5} more" if len(widened) > 5 else ""
    return (f"{path}:{widened[0][0]}: {len(widened)} token line(s) of document "
            f"{doc.name!r} end in empty fields after field {width}, where the "
            f"coreference column is on its other token lines: {shown}{more}; "
            f"the empty fields (a trailing tab) are ignored, the coreference read "
            f"from field {width}, the last non-empty field (as the reference "
            f"scorer's tab split does)")


def _repeated_spans(doc: CorefDocument, clusters: dict[int, list[tuple[int, int]]],
                    first_open: dict[int, int], path: Path) -> list[str]:
    """A note for each gold span annotated more than once in ``doc`` (the file's entity
    numbers in ``clusters``), naming the document, the span (tokens, lines, words) and the
    entities. The scores (:mod:`bertkit.metrics.coref`) count such a span once, in its first
    entity; the reference scorer (Pradhan et al., 2014, v8.01 ``IdentifMentions``) prints
    "Repeated mention in the key", counts it once among the key mentions, but keeps it in each
    entity it was annotated in, so its link-based scores may differ from bertkit's there."""
    owners: dict[tuple[int, int], list[int]] = {}
    for entity, mentions in clusters.items():
        for span in mentions:
            owners.setdefault(span, []).append(entity)
    words = doc.words
    notes = []
    for (s, e), entities in sorted(owners.items()):
        if len(entities) < 2:
            continue
        lines = (f"line {doc.token_lines[s]}" if s == e else
                 f"lines {doc.token_lines[s]}-{doc.token_lines[e]}")
        kept = min(entities, key=lambda k: (min(clusters[k]), first_open[k]))
        distinct = sorted(set(entities), key=entities.index)
        listed = (f"in entities {' and '.join(str(k) for k in distinct)}" if len(distinct) > 1
                  else f"in entity {distinct[0]}")
        notes.append(f"{path}:{doc.token_lines[s]}: document {doc.name!r}: gold span tokens "
                     f"{s}-{e} ({lines}, {' '.join(words[s:e + 1])!r}) is annotated "
                     f"{len(entities)} times, {listed}; scored once, in entity "
                     f"{kept} (its first); the reference scorer prints \"Repeated mention in "
                     f"the key\" and keeps it in each of these entities, so its scores may "
                     f"differ from these")
    return notes


def coref_column(n_tokens: int, clusters: list[list[tuple[int, int]]]) -> list[str]:
    """The last column for ``n_tokens`` tokens: ``(k``, ``k)``, ``(k)`` joined by ``|``, ``-``.

    Entity ``k`` is the cluster's index. At a token, closings of longer mentions come after the
    openings, as the reference scorer's files order them (``(1|(2)`` ... ``2)|1)``).

    >>> coref_column(3, [[(0, 1), (2, 2)]])
    ['(0', '0)', '(0)']
    """
    opens: list[list[tuple[int, str]]] = [[] for _ in range(n_tokens)]
    closes: list[list[tuple[int, str]]] = [[] for _ in range(n_tokens)]
    singles: list[list[str]] = [[] for _ in range(n_tokens)]
    for k, mentions in enumerate(clusters):
        for s, e in mentions:
            if s == e:
                singles[s].append(f"({k})")
            else:
                opens[s].append((-e, f"({k}"))  # longer mentions open first
                closes[e].append((-s, f"{k})"))  # shorter (later-opened) mentions close first
    out = []
    for i in range(n_tokens):
        parts = ([p for _, p in sorted(opens[i])] + singles[i]
                 + [p for _, p in sorted(closes[i])])
        out.append("|".join(parts) if parts else "-")
    return out


def format_conll2012(docs: list[CorefDocument], clusters: list[list[list[tuple[int, int]]]]
                     ) -> str:
    """CoNLL-2012 text of ``docs`` with ``clusters[d]`` in the last column (other columns as read;
    documents made from text get ``name 0 index word`` columns)."""
    lines: list[str] = []
    for doc, cl in zip(docs, clusters):
        name, _, part = doc.name.partition("; part ")
        lines.append(f"#begin document ({name}); part {part or '0'}")
        column = coref_column(len(doc.words), cl)
        i = 0
        for sent in doc.sentences:
            for j, word in enumerate(sent):
                row = doc.rows[i][:-1] if doc.rows else [name, part or "0", str(j), word]
                lines.append("\t".join(row + [column[i]]))
                i += 1
            lines.append("")
        lines.append("#end document")
    return "\n".join(lines) + "\n"
