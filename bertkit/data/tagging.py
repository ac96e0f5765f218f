"""Entity tagging schemes: detection of IOB1 / IOB2 / IOBES and conversion to IOB2.

IOB1 (Ramshaw & Marcus, 1995; CoNLL-2003's original release): ``I-X`` may open an entity, ``B-X``
only separates two adjacent entities of the same type. IOB2 (Tjong Kim Sang & Veenstra, 1999):
every entity opens with ``B-X``. IOBES adds ``E-X`` (end) and ``S-X`` (single-token entity).
bertkit trains and scores in IOB2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from bertkit.data.text import normalize_label
from bertkit.errors import BertkitError

SCHEMES = ("IOB1", "IOB2", "IOBES")
_PREFIXES = {"B", "I", "E", "S"}


@dataclass(frozen=True)
class Tag:
    """A parsed tag: ``prefix`` in {"O", "B", "I", "E", "S"} and entity ``type`` ("" for O)."""

    prefix: str
    type: str


def parse_tag(tag: str, *, file: str | None = None, line: int | None = None) -> Tag:
    """Split ``"B-Chemical"`` into ``Tag("B", "Chemical")``; the tag is NFC-normalised and
    stripped first (:func:`bertkit.data.text.normalize_label`).

    Raises:
        BertkitError: a tag other than ``O`` without a B-/I-/E-/S- prefix, or a prefix with no type.

    >>> parse_tag("I-Disease")
    Tag(prefix='I', type='Disease')
    """
    tag = normalize_label(tag)  # NFC, stripped: "B-Protéine" in NFD and NFC is one type
    if tag == "O":
        return Tag("O", "")
    prefix, sep, etype = tag.partition("-")
    if not sep or prefix not in _PREFIXES:
        raise BertkitError(
            f"unknown tag '{tag}'", file=file, line=line,
            expected="O or a tag B-TYPE, I-TYPE (IOB1/IOB2) or E-TYPE, S-TYPE (IOBES)",
        )
    if not etype:
        raise BertkitError(f"tag '{tag}' has no entity type", file=file, line=line,
                           expected=f"{prefix}-TYPE, e.g. {prefix}-Chemical")
    return Tag(prefix, etype)


def detect_scheme(sentences: Sequence[Sequence[Tag]]) -> str:
    """Name the scheme of already-parsed tag sequences: ``"IOBES"``, ``"IOB1"`` or ``"IOB2"``.

    IOBES if any ``E-``/``S-`` tag occurs; IOB1 if any ``I-X`` opens an entity (after ``O``, after
    another type, or at the start of a sentence), which IOB2 forbids; IOB2 otherwise.
    """
    iob1 = False
    for tags in sentences:
        prev = Tag("O", "")
        for tag in tags:
            if tag.prefix in ("E", "S"):
                return "IOBES"
            if tag.prefix == "I" and (prev.prefix == "O" or prev.type != tag.type):
                iob1 = True
            prev = tag
    return "IOB1" if iob1 else "IOB2"


def entity_openings(sentences: Sequence[Sequence[Tag]]) -> tuple[int, list[tuple[int, int]]]:
    """How entities open in IOB1/IOB2 tag sequences: the number opened by ``B-X`` after ``O``,
    another type or the sentence start (IOB2's rule, which IOB1 never writes), and the
    ``(sentence, word)`` places where ``I-X`` opens one (IOB1's rule, which IOB2 forbids).

    A file with more ``B-`` openings is IOB2 with stray ``I-`` tags (spaCy#2661), not IOB1.

    >>> entity_openings([[Tag("B", "C"), Tag("O", ""), Tag("I", "C")], [Tag("B", "D")]])
    (2, [(0, 2)])
    """
    b_opens, i_opens = 0, []
    for s, tags in enumerate(sentences):
        prev = Tag("O", "")
        for w, tag in enumerate(tags):
            opens = prev.prefix == "O" or prev.type != tag.type
            if tag.prefix == "B" and opens:
                b_opens += 1
            elif tag.prefix == "I" and opens:
                i_opens.append((s, w))
            prev = tag
    return b_opens, i_opens


def to_iob2(tags: Sequence[Tag], scheme: str) -> list[str]:
    """Convert one sentence's tags from ``scheme`` to IOB2 strings.

    For IOBES, ``S-X`` -> ``B-X`` and ``E-X`` -> ``I-X``; an ``I-X``/``E-X`` that cannot continue the
    previous tag opens a new entity (``B-X``), as conlleval reads it. For IOB1 the same rule applies.

    >>> to_iob2([Tag("I", "Chem"), Tag("I", "Chem"), Tag("B", "Chem"), Tag("O", "")], "IOB1")
    ['B-Chem', 'I-Chem', 'B-Chem', 'O']
    """
    out: list[str] = []
    prev = Tag("O", "")
    for tag in tags:
        if tag.prefix == "O":
            out.append("O")
        elif tag.prefix in ("B", "S"):
            out.append(f"B-{tag.type}")
        else:  # I or E: continues the previous entity only if it is of the same type and open
            continues = prev.prefix in ("B", "I") and prev.type == tag.type
            out.append(f"{'I' if continues else 'B'}-{tag.type}")
        # after E-/S- the entity is closed: a following I-X starts a new one
        prev = Tag("O", "") if tag.prefix in ("E", "S") else tag
    return out


def iob2_label_set(types: Sequence[str]) -> list[str]:
    """The sorted IOB2 label list for entity ``types``: ``O`` plus ``B-T`` and ``I-T`` for each.

    Sorted so that the label map is deterministic whatever order the data presents.
    """
    labels = {"O"}
    for etype in types:
        labels.update((f"B-{etype}", f"I-{etype}"))
    return sorted(labels)


def allowed_transitions(labels: Sequence[str]) -> tuple[list[bool], list[list[bool]]]:
    """Which IOB2 label sequences are valid.

    Returns:
        start: ``[C]`` whether a sentence may start with each label (not ``I-X``).
        trans: ``[C][C]`` ``trans[i][j]`` whether label ``j`` may follow label ``i``: ``I-X`` only
        after ``B-X`` or ``I-X``.
    """
    parsed = [Tag("O", "") if lab == "O" else Tag(*lab.split("-", 1)) for lab in labels]
    start = [t.prefix != "I" for t in parsed]
    trans = [[(b.prefix != "I") or (a.prefix in ("B", "I") and a.type == b.type) for b in parsed]
             for a in parsed]
    return start, trans
