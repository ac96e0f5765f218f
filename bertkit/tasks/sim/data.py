"""Sentence-pair similarity data: JSON lines ``{"text", "text_pair", "score"}`` (the shared
BIOSSES layout), or a registered set under ``$BERTKIT_DATA/sim/<name>/``.

Every record is checked as it is read: bad JSON, a missing or non-string text or pair text, and a
score that is missing or not a finite number stop the run with ``FILE:LINE`` and what a record
should be, before anything is trained, unless ``skip_bad_lines`` (each skipped and listed).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertkit.data.conll import read_lines
from bertkit.data.sets import missing_message, resolve_local
from bertkit.errors import BertkitError

EXTENSIONS = (".jsonl", ".json")
LAYOUT = "sim/<name>/{train,dev,test}.jsonl"


@dataclass
class PairExample:
    """One text pair: ``text``, ``text_pair``, the gold ``score`` (None when unlabelled), where
    it came from and the input object ``raw`` (copied to prediction files)."""

    text: str
    text_pair: str
    score: float | None
    file: str = ""
    line: int = 0
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Fields:
    """The field names of the first text, the second text and the score."""

    text: str = "text"
    pair: str = "text_pair"
    score: str = "score"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, float) and not math.isfinite(value):  # JSON's NaN / Infinity
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return {dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


def make_pair(record: Any, fields: Fields, labelled: bool, file: str, line: int) -> PairExample:
    """A :class:`PairExample` from one parsed JSON record.

    Raises:
        ValueError: not an object; a text or pair text missing, not a string or empty; with
            ``labelled``, a score missing or not a finite JSON number (the reason only: the
            caller adds file and line).
    """
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object but {type(record).__name__}")
    texts = []
    for name, what in ((fields.text, "first text"), (fields.pair, "pair text")):
        if name not in record:
            found = ", ".join(sorted(map(str, record))) or "none"
            raise ValueError(f"no {what} field '{name}' (fields: {found}): a similarity example "
                             f"is a pair of texts")
        value = record[name]
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"'{name}' is {_kind(value) if not isinstance(value, str) else 'empty'}"
                             f", expected a non-empty string")
        texts.append(value)
    score = None
    if labelled:
        if fields.score not in record:
            raise ValueError(f"no score field '{fields.score}'")
        value = record[fields.score]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise ValueError(f"'{fields.score}' is {_kind(value)}, expected a finite number "
                             f"(the similarity score)")
        score = float(value)
    return PairExample(texts[0], texts[1], score, file, line, dict(record))


def read_pairs(path: str | Path, fields: Fields = Fields(), labelled: bool = True,
               skip_bad_lines: bool = False, hint: str = "") -> tuple[list[PairExample], list[str]]:
    """The pairs of one JSON-lines file and the lines skipped (``"file:line: reason"``);
    ``hint`` is added to what a bad line's message says is expected.

    Raises:
        BertkitError: missing file, bad encoding, the first bad record (without
            ``skip_bad_lines``), or a file with no pair.
    """
    path = Path(path)
    expected = (f'one JSON object a line with "{fields.text}" and "{fields.pair}" (non-empty '
                f'strings)' + (f' and "{fields.score}" (a number)' if labelled else "") + hint)
    out, bad = [], []
    for number, text in read_lines(path, old_mac=labelled):
        if not text.strip():
            continue
        try:
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
            out.append(make_pair(record, fields, labelled, str(path), number))
        except ValueError as exc:
            if not skip_bad_lines:
                raise BertkitError(str(exc), file=path, line=number,
                                   expected=f"{expected}; or --skip-bad-lines") from None
            bad.append(f"{path}:{number}: {exc}")
    if not out:
        raise BertkitError("no text pair found", file=path, expected=expected)
    return out, bad


def load_sim_data(data: str, splits: tuple[str, ...], fields: Fields = Fields(),
                  skip_bad_lines: bool = False) -> tuple[dict, dict, dict]:
    """Load ``splits`` of ``data`` (a directory or a registered name under ``$BERTKIT_DATA``),
    each checked against the score range the set declares (:func:`declared_range`).

    Returns:
        (``{split: [PairExample]}``, ``{split: path}``, ``{split: [bad line, ...]}``).

    Raises:
        BertkitError: unknown name, missing split file, a bad line, a registered set not
            under ``$BERTKIT_DATA``, or a score outside the set's declared range.
    """
    files = resolve_local(data, "sim", EXTENSIONS, splits)
    if files is None:
        raise BertkitError(missing_message("sim", data, LAYOUT))
    declared = declared_range(data)
    out, sources, bad = {}, {}, {}
    for split, path in files.items():
        out[split], bad[split] = read_pairs(path, fields, True, skip_bad_lines)
        sources[split] = str(path)
        if declared is not None:
            check_declared_range(out[split], path, declared, data)
    return out, sources, bad


def declared_range(data: str) -> tuple[float, float] | None:
    """The score scale ``(low, high)`` that the registered set ``data`` declares
    (:attr:`bertkit.data.sets.DatasetEntry.score_range`), given by name or as its folder under
    ``$BERTKIT_DATA/sim/``; None for any other directory or a set that declares none."""
    from bertkit.data.sets import data_root, entry

    found = entry("sim", data)
    root, path = data_root(), Path(data).expanduser()
    if found is None and root is not None and path.is_dir():
        try:
            inside = path.resolve().relative_to((root / "sim").resolve()).parts
        except ValueError:
            inside = ()
        found = entry("sim", inside[0]) if len(inside) == 1 else None
    return found.score_range if found is not None else None


def check_declared_range(pairs: list[PairExample], path: str | Path,
                         declared: tuple[float, float], name: str) -> None:
    """Refuse a split with a score outside the set's declared range (a file of another scale,
    or a typo), naming its first such line.

    Raises:
        BertkitError: a score below ``declared[0]`` or above ``declared[1]``.
    """
    low, high = declared
    outside = [x for x in pairs if x.score is not None and not low <= x.score <= high]
    if outside:
        first = outside[0]
        raise BertkitError(
            f"score {first.score:g} is outside the range {low:g}-{high:g} that {name} declares "
            f"({len(outside)} of {len(pairs)} pairs of this file outside it)", file=path,
            line=first.line, expected=f"scores from {low:g} to {high:g}, the set's scale (a "
                                      f"file on another scale belongs in a directory of its "
                                      f"own, given by path)")


SCALE_RATIO = 3.0  # one split's score range under a third of another's: two scales
MIN_PAIRS_FOR_SCALE = 5  # fewer pairs say too little about a split's range


def score_range(pairs: list[PairExample]) -> tuple[float, float]:
    """The lowest and highest gold score of ``pairs`` (labelled ones)."""
    scores = [x.score for x in pairs if x.score is not None]
    return min(scores), max(scores)


def check_scales(splits: dict[str, list[PairExample]], sources: dict[str, str]) -> None:
    """Refuse splits whose scores are on different scales (train 0-1, dev and test 0-5:
    sentence-transformers#95, #156): a model trained on one scale and scored on the other gives
    an MSE far above the mean predictor's, without a word. Each split's range is compared with
    train's: the narrower one covering under 1 / :data:`SCALE_RATIO` of the other's width (both
    with at least :data:`MIN_PAIRS_FOR_SCALE` pairs and varying scores) is a mismatch.

    Raises:
        BertkitError: a mismatch, naming both splits' ranges and files.
    """
    if "train" not in splits:
        return
    ranges = {s: score_range(xs) for s, xs in splits.items() if xs}
    tlo, thi = ranges["train"]
    for split, (lo, hi) in ranges.items():
        if split == "train" or min(len(splits[split]), len(splits["train"])) < \
                MIN_PAIRS_FOR_SCALE:
            continue
        narrow, wide = sorted((thi - tlo, hi - lo))
        if narrow > 0 and narrow * SCALE_RATIO < wide:
            raise BertkitError(
                f"the splits' scores look like two scales: train {tlo:g} to {thi:g} "
                f"({len(splits['train'])} pairs, {sources.get('train')}), {split} {lo:g} to "
                f"{hi:g} ({len(splits[split])} pairs)", file=sources.get(split),
                expected="every split's scores on one scale (rescale one file)")
