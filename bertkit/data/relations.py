"""Relation-extraction input: JSON lines, one entity pair a line, in three accepted forms.

* **Marker form** (SciBERT's ChemProt/SciERC release, Beltagy et al., 2019): ``text`` in which one
  entity is wrapped in ``<< … >>`` and the other in ``[[ … ]]``, plus ``label``. The ``<< >>``
  entity fills the first slot (``e1``, marked ``[E1] … [/E1]`` for the model) and the ``[[ ]]``
  entity the second, whatever their order in the text. In the release the markers are set off by
  spaces (``<< aspirin >>``), while the text itself may hold ``<<``, ``>>`` or ``[[`` inside chemical
  names (``6[[(3-iodophenyl)``, ``AS-8112>>metoclopramide``) or as "much greater than"
  (``IC50 >> 10``): an opening marker is therefore the one followed by whitespace (it must be
  unique; a bare ``<<aspirin>>`` is accepted when it is the only one) and the closing marker the
  first one after it preceded by whitespace (else the first bare one after it).
* **Span form**: ``tokens`` (words), ``subject`` and ``object`` as ``{"start", "end", "type"?}``
  word offsets (end exclusive), ``label``.
* **TACRED form** (Zhang et al., 2017): ``token``, ``subj_start``/``subj_end``/``obj_start``/
  ``obj_end`` (end *inclusive*, as TACRED ships them), optional ``subj_type``/``obj_type``,
  ``relation``.

Every form is normalised to a :class:`RelationExample`: the text without markers and the two
entities as character spans of it. A bad line (invalid JSON or UTF-8, no recognisable form, a
missing or doubled marker, offsets out of range, overlapping entities, a missing label) is a
:class:`BadLine` naming file and line; :func:`read_relations` raises on the first unless
``skip_bad_lines``, in which case the lines are skipped and listed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertkit.data.text import normalize_label
from bertkit.errors import BertkitError

MARKERS = {"e1": ("<<", ">>"), "e2": ("[[", "]]")}


@dataclass(frozen=True)
class EntitySpan:
    """An entity as a character span ``[start, end)`` of :attr:`RelationExample.text`."""

    start: int
    end: int
    type: str | None = None


@dataclass
class RelationExample:
    """One entity pair.

    Attributes:
        text: the sentence without markers (span/TACRED forms: the words joined by single spaces).
        e1: the subject slot (``<< >>`` in the marker form, ``subject`` / ``subj_*`` otherwise).
        e2: the object slot (``[[ ]]``, ``object`` / ``obj_*``).
        label: the gold relation, or None for unlabelled input.
        file, line: where the example was read (1-based line).
        raw: the JSON object as read (prediction output echoes it).
    """

    text: str
    e1: EntitySpan
    e2: EntitySpan
    label: str | None
    file: str = ""
    line: int = 0
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BadLine:
    """A line that could not be read: where, and why."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class RelationFile:
    """The examples of one file, and the bad lines skipped (empty unless ``skip_bad_lines``)."""

    examples: list[RelationExample]
    bad_lines: list[BadLine]
    path: str


class _Bad(Exception):
    pass


def _find_opening(text: str, mark: str) -> int:
    """Index of the unique opening ``mark``: the one followed by whitespace, else a bare one."""
    spaced = [m.start() for m in re.finditer(re.escape(mark) + r"(?=\s)", text)]
    if len(spaced) == 1:
        return spaced[0]
    if len(spaced) > 1:
        raise _Bad(f"doubled marker '{mark}' ({len(spaced)} occurrences set off by spaces)")
    bare = [m.start() for m in re.finditer(re.escape(mark), text)]
    if len(bare) == 1:
        return bare[0]
    raise _Bad(f"missing opening marker '{mark}'" if not bare
               else f"doubled marker '{mark}' ({len(bare)} occurrences, none set off by a space)")


def _find_closing(text: str, mark: str, after: int) -> int:
    """Index of the closing ``mark`` that ends the entity opened before ``after``: the first one
    after it preceded by whitespace, else the first bare one after it (later ones are text, as
    the ``>>`` of "much greater than" in ChemProt)."""
    spaced = re.compile(r"(?<=\s)" + re.escape(mark)).search(text, after)
    if spaced:
        return spaced.start()
    bare = text.find(mark, after)
    if bare < 0:
        raise _Bad(f"missing closing marker '{mark}'"
                   + (" (one comes before its opening marker)" if mark in text[:after] else ""))
    return bare


def parse_marked(text: str) -> tuple[str, EntitySpan, EntitySpan]:
    """Strip ``<< >>`` and ``[[ ]]`` from ``text``: the plain text and the two entity spans.

    The whitespace just inside each marker is dropped from the entity; the markers and that
    whitespace are removed from the text (outer whitespace kept, so words stay apart).

    >>> parse_marked("<< Aspirin >> blocks [[ COX-1 ]].")
    ('Aspirin blocks COX-1.', EntitySpan(start=0, end=7, type=None), EntitySpan(start=15, end=20, type=None))

    Raises:
        _Bad: a missing or doubled opening marker, no closing marker after it, an empty
            entity, or entities that overlap or nest.
    """
    spans = {}
    for slot, (op, cl) in MARKERS.items():
        a = _find_opening(text, op)
        b = _find_closing(text, cl, a + len(op))
        inner_start = a + len(op)
        inner = text[inner_start:b]
        lead = len(inner) - len(inner.lstrip())
        stripped = inner.strip()
        if not stripped:
            raise _Bad(f"empty entity between '{op}' and '{cl}'")
        spans[slot] = (a, b + len(cl), inner_start + lead, inner_start + lead + len(stripped))
    (a1, z1, _, _), (a2, z2, _, _) = spans["e1"], spans["e2"]
    if a1 < z2 and a2 < z1:
        raise _Bad("the '<< >>' and '[[ ]]' entities overlap or nest")
    # rebuild the text without markers, mapping the entity spans
    order = sorted(spans, key=lambda s: spans[s][0])
    pieces, pos, out_len, new = [], 0, 0, {}
    for slot in order:
        a, z, s, e = spans[slot]
        before = text[pos:a]
        pieces.append(before)
        out_len += len(before)
        ent = text[s:e]
        new[slot] = EntitySpan(out_len, out_len + len(ent))
        pieces.append(ent)
        out_len += len(ent)
        pos = z
    pieces.append(text[pos:])
    return "".join(pieces), new["e1"], new["e2"]


def _word_span(obj: Any, n: int, name: str, inclusive_end: bool = False) -> tuple[int, int, Any]:
    if not isinstance(obj, dict) or "start" not in obj or "end" not in obj:
        raise _Bad(f"'{name}' must be an object with 'start' and 'end' word offsets")
    start, end = obj["start"], obj["end"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        raise _Bad(f"'{name}' offsets must be integers, got start={start!r}, end={end!r}")
    if inclusive_end:
        end += 1
    if not 0 <= start < end <= n:
        raise _Bad(f"'{name}' offsets start={obj['start']}, end={obj['end']} out of range for "
                   f"{n} tokens" + (" (end inclusive)" if inclusive_end else " (end exclusive)"))
    etype = obj.get("type")
    if etype is not None and not isinstance(etype, str):
        raise _Bad(f"'{name}' type must be a string")
    return start, end, etype


def _from_words(tokens: Any, subj: tuple, obj: tuple) -> tuple[str, EntitySpan, EntitySpan]:
    (s1, e1, t1), (s2, e2, t2) = subj, obj
    if s1 < e2 and s2 < e1:
        raise _Bad(f"subject [{s1}, {e1}) and object [{s2}, {e2}) overlap")
    starts, pos = [], 0
    for w in tokens:
        starts.append(pos)
        pos += len(w) + 1
    text = " ".join(tokens)

    def span(s, e, t):
        return EntitySpan(starts[s], starts[e - 1] + len(tokens[e - 1]), t)

    return text, span(s1, e1, t1), span(s2, e2, t2)


def _tokens(obj: dict, key: str) -> list[str]:
    tokens = obj[key]
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise _Bad(f"'{key}' must be a non-empty list of strings")
    if any(not t or t.isspace() or any(c.isspace() for c in t) for t in tokens):
        raise _Bad(f"'{key}' holds an empty token or one with whitespace inside")
    return tokens


def parse_record(obj: Any, labelled: bool) -> tuple[str, EntitySpan, EntitySpan, str | None]:
    """Normalise one decoded JSON line (any of the three forms; see module docstring).

    Returns:
        (text, e1, e2, label); label is None when absent and ``labelled`` is False.

    Raises:
        _Bad: what is wrong with the record.
    """
    if not isinstance(obj, dict):
        raise _Bad(f"a line must hold a JSON object, not {type(obj).__name__}")
    if "text" in obj and "tokens" not in obj and "token" not in obj:
        if not isinstance(obj["text"], str):
            raise _Bad("'text' must be a string")
        text, e1, e2 = parse_marked(obj["text"])
        label = obj.get("label")
    elif "tokens" in obj:
        tokens = _tokens(obj, "tokens")
        for key in ("subject", "object"):
            if key not in obj:
                raise _Bad(f"span form without '{key}'", )
        n = len(tokens)
        text, e1, e2 = _from_words(tokens, _word_span(obj["subject"], n, "subject"),
                                   _word_span(obj["object"], n, "object"))
        label = obj.get("label")
    elif "token" in obj:
        tokens = _tokens(obj, "token")
        spans = []
        for p in ("subj", "obj"):
            missing = [k for k in (f"{p}_start", f"{p}_end") if k not in obj]
            if missing:
                raise _Bad(f"TACRED form without {', '.join(missing)}")
            spans.append(_word_span({"start": obj[f"{p}_start"], "end": obj[f"{p}_end"],
                                     "type": obj.get(f"{p}_type")}, len(tokens), p,
                                    inclusive_end=True))
        text, e1, e2 = _from_words(tokens, spans[0], spans[1])
        label = obj.get("relation", obj.get("label"))
    else:
        raise _Bad("no 'text' with << >> and [[ ]] markers, no 'tokens' with 'subject'/'object', "
                   f"no TACRED 'token' (fields: {', '.join(sorted(map(str, obj))) or 'none'})")
    if label is None and labelled:
        raise _Bad("no label ('label', or 'relation' in the TACRED form)")
    if label is not None and not isinstance(label, str):
        raise _Bad(f"the label must be a string, got {label!r}")
    if label is not None and not label.strip():
        raise _Bad("empty label")
    if label is not None:  # NFC, stripped: "CPR:4 " and "CPR:4" are one relation
        label = normalize_label(label)
    return text, e1, e2, label


def read_relations(path: str | Path, labelled: bool = True, skip_bad_lines: bool = False,
                   text_lines: bool = False) -> RelationFile:
    """Read a relation file (see module docstring); blank lines are ignored.

    Args:
        labelled: every line must carry a label (training and evaluation data).
        skip_bad_lines: skip bad lines and list them in :attr:`RelationFile.bad_lines` instead of
            raising on the first.
        text_lines: each line is a plain marked sentence (marker form without JSON).

    Raises:
        BertkitError: the file cannot be read, a bad line (without ``skip_bad_lines``; the message
            counts the others), or no example at all.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BertkitError(f"cannot read the file: {exc.strerror}", file=path) from None
    examples: list[RelationExample] = []
    bad: list[BadLine] = []
    for i, raw_line in enumerate(data.split(b"\n"), start=1):
        if not raw_line.strip():
            continue
        try:
            try:
                line = raw_line.decode("utf-8-sig" if i == 1 else "utf-8").rstrip("\r")
            except UnicodeDecodeError as exc:
                raise _Bad(f"not UTF-8 (byte {exc.start + 1})") from None
            if text_lines:
                obj = {"text": line}
                text, e1, e2 = parse_marked(line)
                label = None
            else:
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise _Bad(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
                text, e1, e2, label = parse_record(obj, labelled)
        except _Bad as exc:
            bad.append(BadLine(str(path), i, str(exc)))
            continue
        examples.append(RelationExample(text, e1, e2, label, str(path), i, obj))
    if bad and not skip_bad_lines:
        first = bad[0]
        more = ""
        if len(bad) > 1:
            lines = ", ".join(str(b.line) for b in bad[1:11])
            more = f" [{len(bad) - 1} more bad line(s): {lines}{', ...' if len(bad) > 11 else ''}]"
        raise BertkitError(first.message + more, file=first.file, line=first.line,
                           expected="JSON lines with 'text' (<< >>, [[ ]] markers) or 'tokens' "
                                    "with 'subject'/'object', and 'label'; or --skip-bad-lines to "
                                    "skip and count bad lines")
    if not examples:
        raise BertkitError("no relation examples in the file", file=path,
                           expected="JSON lines with 'text' (<< >>, [[ ]] markers) or 'tokens' "
                                    "with 'subject'/'object', and 'label'")
    return RelationFile(examples, bad, str(path))
