"""Extractive QA data: SQuAD JSON as released (``data`` -> articles -> ``paragraphs`` ->
``context``, ``qas``) and the flat JSON lines that ``datasets`` exports (``id``, ``title``,
``context``, ``question``, ``answers: {text: [...], answer_start: [...]}``), or a registered set
under ``$BERTKIT_DATA/qa/<name>/{train,dev,test}.json`` (``squad``, ``squad-v2``, ``covid-qa``).

Every question is checked as it is read; a problem stops the run before anything is trained with
a :class:`~bertkit.errors.BertkitError` naming the file, the article title (or its number) and the
question id: an empty context or question, a question id given twice in a file, an
``answer_start`` that does not index its answer text in the context. An answer whose text starts
or ends with whitespace (655 in COVID-QA) is trimmed and its offset shifted by the characters
trimmed, so its span starts and ends on text (the labels of :mod:`bertkit.tasks.qa.encoding`).

A question with no answers is unanswerable (SQuAD 2.0). ``is_impossible: true`` beside a
non-empty ``answers`` list (a converter that merged plausible answers) keeps the answers, as the
official v2.0 scorer does (``bool(answers)``), with a :class:`QAInputWarning` naming each such
question. A file that declares ``"version": "1.1"`` is recorded (:attr:`QAExample.declared`) so
that unanswerable questions in it are refused unless SQuAD 2.0 mode is asked for
(:func:`bertkit.tasks.qa.task.decide_v2`). A split may also be one JSON array of records.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from bertkit.data.sets import entry, not_available, resolve_local
from bertkit.data.text import visible
from bertkit.errors import BertkitError

EXTENSIONS = (".json", ".jsonl")
LAYOUT = "qa/<name>/{train,dev,test}.json"


@dataclass
class QAExample:
    """One question over one context.

    Attributes:
        qid: the question id (unique in its file).
        question / context: the texts as given (the context is never changed: answers are cut
            from it by character offsets).
        answers: gold answer texts (trimmed); empty for an unanswerable or unlabelled question.
        starts: character offset of each answer in ``context``.
        title: the article title (``article N`` when the file gives none).
        file: where the question was read; line: 1-based line (JSON lines) or None (SQuAD JSON).
        labelled: whether the input gave answers at all (prediction input may not).
        declared: the ``version`` a SQuAD JSON file declares (``""``: none).
        impossible: the record said ``is_impossible: true``.
    """

    qid: str
    question: str
    context: str
    answers: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    title: str = ""
    file: str = ""
    line: int | None = None
    labelled: bool = True
    declared: str = ""
    impossible: bool = False

    @property
    def answerable(self) -> bool:
        """Whether the question has a gold answer."""
        return bool(self.answers)


def _where(title: str, qid: Any, line: int | None) -> str:
    """``article 'T', question 'Q'``; JSON lines (``line`` set) name no article unless the record
    gives a title (the line number is the place: :class:`BertkitError` prints ``file:line``)."""
    parts = [] if line is not None and not title else [f"article {title!r}"]
    if qid is not None:
        parts.append(f"question {qid!r}")
    return ", ".join(parts)


def _error(message: str, path: Path, title: str, qid: Any, line: int | None = None,
           expected: str | None = None) -> BertkitError:
    where = _where(title, qid, line)
    return BertkitError(f"{where}: {message}" if where else message, file=path, line=line,
                        expected=expected)


class QAInputWarning(UserWarning):
    """A problem in prediction input that does not stop the prediction (a gold answer that
    cannot be used: the question is answered without it)."""


def trim_answer(text: str, start: int) -> tuple[str, int]:
    """The answer without surrounding whitespace and its offset shifted accordingly.

    >>> trim_answer(" ACE2 ", 10)
    ('ACE2', 11)
    """
    stripped = text.lstrip()
    return stripped.rstrip(), start + len(text) - len(stripped)


def _answers(raw: Any) -> tuple[list[Any], list[Any]] | None:
    """(texts, starts) from SQuAD's list of ``{text, answer_start}`` or ``datasets``'
    ``{text: [...], answer_start: [...]}``; None when malformed."""
    if raw is None:
        return [], []
    if isinstance(raw, dict):
        texts, starts = raw.get("text", []), raw.get("answer_start", [])
        if isinstance(texts, list) and isinstance(starts, list) and len(texts) == len(starts):
            return texts, starts
        return None
    if isinstance(raw, list) and all(isinstance(a, dict) for a in raw):
        return [a.get("text") for a in raw], [a.get("answer_start") for a in raw]
    return None


def make_example(q: dict, context: Any, title: str, path: Path, line: int | None,
                 labelled: bool = True, notes: list[str] | None = None,
                 fields: list[str] | None = None) -> QAExample:
    """Check one question record and build its :class:`QAExample`.

    Args:
        fields: the keys of the record that holds the context (named when it has no
            ``context``).
        labelled: the answers are needed (training, evaluation). False (``predict``): answers
            are optional, and bad ones are dropped (the question unlabelled) with a note added
            to ``notes`` naming the file, article or line and question id, instead of an error.

    Raises:
        BertkitError: missing id, empty question or context; with ``labelled``, also malformed
            answers or an answer whose ``answer_start`` does not index its text (file, article
            or line, question id named).
    """
    qid = q.get("id")
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or str(qid) == "":
        raise _error("question without an id", path, title, None, line, "an 'id' string")
    qid = str(qid)
    if context is None:  # a missing field, not an empty one: name the fields there are
        raise _error(f"no 'context' (fields: {', '.join(sorted(fields or ())) or 'none'})", path,
                     title, qid, line, "a non-empty 'context' string")
    if not isinstance(context, str) or not visible(context):  # zero-width only is empty too
        raise _error("empty context", path, title, qid, line, "a non-empty 'context' string")
    question = q.get("question")
    if not isinstance(question, str) or not visible(question):
        raise _error("empty question", path, title, qid, line, "a non-empty 'question' string")
    try:
        answers, offsets = _gold(q, context, path, title, qid, line)
    except BertkitError as err:
        if labelled:
            raise
        if notes is not None:  # predict: the gold answers are not needed
            notes.append(f"{err}; gold answers of this question ignored")
        return QAExample(qid, question, context, [], [], title, str(path), line, False)
    has = "answers" in q and q.get("answers") is not None
    impossible = q.get("is_impossible") is True
    return QAExample(qid, question, context, answers, offsets, title, str(path), line,
                     labelled and (has or impossible), impossible=impossible)


def _gold(q: dict, context: str, path: Path, title: str, qid: str, line: int | None
          ) -> tuple[list[str], list[int]]:
    """The checked, trimmed gold answers of one question record and their offsets.

    Raises:
        BertkitError: malformed answers, an empty answer or a non-integer offset, an
            ``answer_start`` that does not index its text.
    """
    parsed = _answers(q.get("answers"))
    if parsed is None:
        raise _error(f"answers are {q.get('answers')!r}", path, title, qid, line,
                     "a list of {text, answer_start} or {text: [...], answer_start: [...]}")
    texts, starts = parsed
    answers, offsets = [], []
    for text, start in zip(texts, starts):
        if not isinstance(text, str) or not text.strip() or not isinstance(start, int) \
                or isinstance(start, bool):
            raise _error(f"answer {text!r} at {start!r}", path, title, qid, line,
                         "a non-empty answer text and an integer answer_start")
        if context[start:start + len(text)] != text:
            found = context[max(start, 0):max(start, 0) + len(text)]
            raise _error(f"answer_start {start} does not index the answer {text!r} (the "
                         f"context has {found!r} there)", path, title, qid, line,
                         "answer_start = the character offset of the answer text in the context")
        text, start = trim_answer(text, start)
        answers.append(text)
        offsets.append(start)
    return answers, offsets


def _squad_json(path: Path, doc: Any, labelled: bool, notes: list[str]) -> Iterator[QAExample]:
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise BertkitError("not SQuAD JSON", file=path,
                           expected="an object with 'data': [articles with 'paragraphs']")
    for a, article in enumerate(data, 1):
        title = str(article.get("title") or f"article {a}") if isinstance(article, dict) \
            else f"article {a}"
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise _error("no 'paragraphs' list", path, title, None)
        for p in paragraphs:
            qas = p.get("qas") if isinstance(p, dict) else None
            if not isinstance(qas, list):
                raise _error("a paragraph without a 'qas' list", path, title, None)
            for q in qas:
                if not isinstance(q, dict):
                    raise _error(f"question is {q!r}", path, title, None, expected="an object")
                ex = make_example(q, p.get("context"), title, path, None, labelled, notes,
                                  fields=list(p))
                ex.declared = str(doc.get("version") or "")
                yield ex


def _json_lines(path: Path, text: str, labelled: bool, notes: list[str]) -> Iterator[QAExample]:
    # lines end at LF (or CRLF) only: U+2028 and a lone CR may sit inside a JSON string
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BertkitError(f"not JSON: {exc.msg}", file=path, line=n,
                               expected="one JSON object a line") from None
        if not isinstance(rec, dict):
            raise BertkitError("not a JSON object", file=path, line=n,
                               expected="{id, question, context, answers}")
        title = str(rec.get("title") or "")
        yield make_example(rec, rec.get("context"), title, path, n, labelled, notes,
                           fields=list(rec))


def _json_array(path: Path, doc: list, labelled: bool, notes: list[str]
                ) -> Iterator[QAExample]:
    """A split written as one JSON array of ``datasets`` records (``datasets``' ``to_json(...,
    lines=False)``); a record is named by its title or its number (``record N``, 1-based)."""
    for n, rec in enumerate(doc, 1):
        if not isinstance(rec, dict):
            raise BertkitError(f"record {n} of the JSON array is {type(rec).__name__}",
                               file=path, expected="{id, question, context, answers} objects")
        title = str(rec.get("title") or f"record {n}")
        yield make_example(rec, rec.get("context"), title, path, None, labelled, notes,
                           fields=list(rec))


def read_qa_file(path: str | Path, labelled: bool = True, console=None) -> list[QAExample]:
    """Read a SQuAD JSON file, JSON lines or one JSON array of records (decided by content: a
    whole-file JSON object with ``data`` is SQuAD JSON, a whole-file array holds records, else
    one record a line).

    Args:
        labelled: the file should give answers (training/evaluation); prediction input may not,
            and a bad gold answer there is dropped with a warning (:func:`warn_input`, on
            ``console`` or as a :class:`QAInputWarning`), the question still answered.

    Raises:
        BertkitError: unreadable file, bad JSON, no questions, a question id twice, or a bad
            question (:func:`make_example`).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise BertkitError(f"cannot read the file: {getattr(exc, 'strerror', None) or exc}",
                           file=path) from None
    doc = None
    if text.lstrip().startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = None  # JSON lines (or bad JSON: reported by line)
    notes: list[str] = []
    examples = list(_squad_json(path, doc, labelled, notes)
                    if isinstance(doc, dict) and "data" in doc
                    else _json_array(path, doc, labelled, notes) if isinstance(doc, list)
                    else _json_lines(path, text, labelled, notes))
    if not examples:
        raise BertkitError("no questions found", file=path,
                           expected="SQuAD JSON or JSON lines with id, question, context")
    seen: dict[str, QAExample] = {}
    for ex in examples:
        if ex.qid in seen:
            first = seen[ex.qid]
            raise _error(f"question id given twice (first on line {first.line})"
                         if first.line is not None else
                         f"question id given twice (first in article {first.title!r})",
                         path, ex.title, ex.qid, ex.line, "unique question ids")
        seen[ex.qid] = ex
    if notes:
        warn_input(notes, console)
    both = [ex for ex in examples if ex.impossible and ex.answers]
    if both:
        message = (f"{path}: {len(both)} question(s) say is_impossible: true beside a non-empty "
                   f"answers list; scored as answerable with those answers, as the official v2.0 "
                   f"scorer does (empty their answers to make them unanswerable): "
                   f"{name_questions(both)}")
        if console is not None:
            from bertkit.tasks.common import warn_notes

            warn_notes([message], console)
        else:
            warnings.warn(message, QAInputWarning, stacklevel=2)
    return examples


def warn_input(notes: list[str], console=None, shown: int = 5) -> None:
    """Report the bad optional gold answers of prediction input: on ``console`` when given
    (:func:`bertkit.tasks.common.warn_notes`), else as one :class:`QAInputWarning` (standard
    error in the CLI); the first ``shown`` named, then how many more."""
    more = [f"... {len(notes) - shown} more question(s) with unusable gold answers"] \
        if len(notes) > shown else []
    if console is not None:
        from bertkit.tasks.common import warn_notes

        warn_notes(notes[:shown] + more, console)
        return
    warnings.warn("; ".join(notes[:shown] + more), QAInputWarning, stacklevel=3)


def name_questions(examples: list[QAExample], shown: int = 5) -> str:
    """The place of the first ``shown`` questions (article or line, id), then how many more."""
    named = [_where(x.title, x.qid, x.line) + (f" (line {x.line})" if x.line else "")
             for x in examples[:shown]]
    return "; ".join(named) + (f"; and {len(examples) - shown} more"
                               if len(examples) > shown else "")


def load_qa_data(data: str, splits: tuple[str, ...]) -> tuple[dict, dict]:
    """Load ``splits`` of ``data`` (a directory or a registered name under ``$BERTKIT_DATA``).

    Returns:
        (``{split: [QAExample]}``, ``{split: file}``).

    Raises:
        BertkitError: unknown name, missing split file, a registered set not under the data
            root, or bad data (:func:`read_qa_file`).
    """
    files = resolve_local(data, "qa", EXTENSIONS, splits)
    if files is None:
        reg = entry("qa", data)
        raise not_available("qa", data, LAYOUT, f" ({reg.description})" if reg else "")
    return ({split: read_qa_file(path) for split, path in files.items()},
            {split: str(path) for split, path in files.items()})


def count_unanswerable(examples: list[QAExample]) -> int:
    """Questions without a gold answer."""
    return sum(1 for ex in examples if ex.labelled and not ex.answers)
