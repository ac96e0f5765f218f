"""What the tasks' streaming predictors share about their inputs: telling an ``auto`` format
from the input's head, refusing an unknown format, and the check of a JSON-lines record."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from bertkit.errors import BertkitError
from bertkit.predict.records import Record, open_binary


def head_text(path: str | Path, size: int = 1 << 16) -> str:
    """The first ``size`` bytes of ``path`` (decompressed for ``.gz``) as text, undecodable
    bytes replaced and a byte order mark dropped: what an ``auto`` format is told from.

    Raises:
        BertkitError: the file cannot be opened (:func:`open_binary`).
    """
    with open_binary(path) as handle:
        return handle.read(size).decode("utf-8", errors="replace").lstrip("\ufeff")


def check_format(value: str, allowed: tuple[str, ...], what: str = "input format") -> str:
    """``value`` when it is one of ``allowed``.

    >>> check_format("text", ("auto", "conll", "text"))
    'text'

    Raises:
        BertkitError: naming the unknown ``what`` and the ones there are
            (``unknown input format 'x'``, expected ``auto, conll or text``).
    """
    if value not in allowed:
        raise BertkitError(f"unknown {what} '{value}'",
                           expected=", ".join(allowed[:-1]) + " or " + allowed[-1])
    return value


def json_object_check(make: Callable[[Record], Any], errors: tuple[type, ...] = (ValueError,)
                      ) -> Callable[[Record], str | None]:
    """A predictor's ``check`` (:class:`~bertkit.predict.driver.StreamPredictor`) for JSON
    lines of objects: a blank line is no record; a line that is not a JSON object is bad; else
    ``record.item = make(record)``, and an error of ``errors`` it raises makes the line bad with
    its message (a :class:`~bertkit.errors.BertkitError`'s own, without file and line)."""
    def check(rec: Record) -> str | None:
        if not rec.text.strip():
            return None
        if rec.value is None:
            return rec.bad or "not a JSON object"
        try:
            rec.item = make(rec)
        except errors as exc:
            return exc.message if isinstance(exc, BertkitError) else str(exc)
        return None

    return check
