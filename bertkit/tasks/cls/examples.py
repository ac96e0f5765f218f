"""The records of sentence-classification data: an example and the field names it is read
with (defined here so that the data reader, the label checks and the hub reader share them
without importing each other; :mod:`bertkit.tasks.cls.data` re-exports both)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TextExample:
    """One example: ``text``, optional ``text_pair``, ``label`` (a string, a list of strings
    with multi-label data, or None when unlabelled), where it came from, and the input ``raw``
    object (copied to prediction files). ``empty``: unlabelled input (``predict``) whose text is
    empty once control and zero-width characters are removed: flagged, never labelled."""

    text: str
    text_pair: str | None = None
    label: str | list[str] | None = None
    file: str = ""
    line: int = 0
    raw: dict = field(default_factory=dict)
    empty: bool = False


@dataclass(frozen=True)
class Columns:
    """Field names: text, optional pair, label; ``multi_label``: labels are lists;
    ``label_sep``: a string label is a list joined by this separator (``"a;b"``, multi-label
    only); ``quoting``: ``csv`` (quoted fields, CSV rules) or ``none`` (a ``"`` is part of the
    text; for unquoted TSV exports)."""

    text: str = "text"
    pair: str = "text_pair"
    label: str = "label"
    multi_label: bool = False
    label_sep: str | None = None
    quoting: str = "csv"
