"""A task's training text, unlabelled, for task-adaptive pretraining (TAPT).

TAPT (Gururangan et al., 2020, "Don't Stop Pretraining", sec. 4) continues the masked-LM
objective on the unlabelled text of the task's own training split before fine-tuning. For
``TASK:DATA`` the registered task gives its text (its ``text_lines``: the same readers and split
logic as fine-tuning, e.g. GENIA's train split is ``dev.conllu`` less every tenth sentence), so
TAPT never sees a sentence that fine-tuning evaluates on. A file is read by its format
(:data:`FORMATS`).
"""

from __future__ import annotations

from pathlib import Path

from bertkit.errors import BertkitError

FORMATS = ("a CoNLL token/tag file, a CoNLL-U file, a relation JSONL file (entity markers or "
           "spans), a classification JSONL/CSV/TSV file (a text field), an ID<TAB>TEXT file or "
           "plain text (one sentence a line)")


def _distinct(lines) -> list[str]:
    """Non-empty lines, whitespace-normalised, first occurrence kept (a ChemProt sentence holds
    several entity pairs and would otherwise be repeated once per pair)."""
    return list(dict.fromkeys(" ".join(line.split()) for line in lines if line and line.strip()))


_RELATION_KEYS = ("tokens", "token", "subject", "object", "subj_start", "obj_start")


def _is_relation_record(text: str) -> bool:
    """Whether a JSON line is a relation example (span or TACRED form, or a text with both
    entity markers) rather than a classification record (a plain ``text``)."""
    import json

    try:
        obj = json.loads(text)
    except ValueError:
        return False
    if not isinstance(obj, dict):
        return False
    if any(k in obj for k in _RELATION_KEYS):
        return True
    body = obj.get("text")
    return isinstance(body, str) and all(m in body for m in ("<<", ">>", "[[", "]]"))


def _classification_texts(path: Path) -> list[str]:
    """The texts (and second texts of pairs) of a classification JSONL/CSV/TSV file, labels
    ignored (:func:`bertkit.tasks.cls.data.read_examples`)."""
    from bertkit.tasks.cls.data import read_examples

    lines = []
    for ex in read_examples(path, labelled=False).examples:
        lines += [ex.text] + ([ex.text_pair] if ex.text_pair else [])
    return lines


def _id_tab_text(path: Path) -> list[str] | None:
    """The texts of an ``ID<TAB>TEXT`` file (two tab-separated fields a line, the second a
    sentence: words with spaces, which no CoNLL tag holds), or None when ``path`` is not one. A
    first line ``id<TAB>text`` (a header) is left out."""
    from bertkit.data.conll import read_lines

    rows = [(n, t.split("\t")) for n, t in read_lines(path) if t.strip()]
    if not rows or any(len(fields) != 2 for _, fields in rows):
        return None
    if not any(" " in fields[1].strip() for _, fields in rows[:200]):
        return None
    if rows[0][1][1].strip().lower() in ("text", "sentence", "abstract"):
        rows = rows[1:]
    return [fields[1] for _, fields in rows]


def _from_file(path: Path) -> list[str]:
    from bertkit.data.conll import looks_like_conll, read_conll, read_lines

    suffix = "".join(path.suffixes[-1:]).lower()
    if suffix == ".conllu":
        from bertkit.data.conllu import read_conllu

        return [" ".join(s.words) for s in read_conllu(path, labelled=False)]
    if suffix in (".jsonl", ".json"):
        first = next((t for _, t in read_lines(path) if t.strip()), "")
        if not _is_relation_record(first):
            return _classification_texts(path)
        from bertkit.data.relations import read_relations

        return [ex.text for ex in read_relations(path, labelled=False).examples]
    if suffix == ".csv":
        return _classification_texts(path)
    tabbed = _id_tab_text(path)
    if tabbed is not None:
        return tabbed
    if suffix == ".tsv" and not looks_like_conll(path):
        return _classification_texts(path)
    if looks_like_conll(path):
        return [" ".join(s.tokens) for s in read_conll(path, labelled=False).sentences]
    return [text for _, text in read_lines(path)]


def task_text_lines(spec: str, max_examples: int | None = None) -> list[str]:
    """The training sentences of a task data set as plain text lines (TAPT input).

    Args:
        spec: ``TASK:DATA`` with TASK a registered task (:mod:`bertkit.tasks.registry`) and
            DATA a registered set (``ner:bc5cdr``, ``re:chemprot``, ``dep:genia``,
            ``cls:scicite``, ``qa:squad``; under ``$BERTKIT_DATA``) or a directory with the
            task's split files; or a file:
            ``.conllu`` (CoNLL-U words), ``.jsonl`` (relation JSONL, markers stripped, or
            classification JSONL: its ``text``), ``.csv``/``.tsv`` with a ``text`` column, an
            ``ID<TAB>TEXT`` file, a CoNLL token/tag file, or plain text (one sentence a line).
        max_examples: read only the first N training examples (sentences, texts, questions;
            relation pairs before their shared sentences are merged), as fine-tuning's
            ``--max-train-samples`` does; None reads them all.

    Returns:
        the distinct sentences of the training split (or of the file), words joined by single
        spaces, in file order.

    Raises:
        BertkitError: an unknown task, a missing data set or file, a malformed file (file and
            line named by the reader), or no text at all.

    Reference:
        Gururangan et al. (2020), "Don't Stop Pretraining", sec. 4 (task-adaptive pretraining).
    """
    try:
        return _task_text_lines(str(spec), max_examples)
    except BertkitError as exc:  # the readers' advice names fine-tuning options adapt lacks
        expected = _without_reader_options(exc.expected or "")
        if exc.expected and ("--skip-bad-lines" in exc.expected or not expected):
            expected = ((expected + "; ") if expected else "") + \
                "the line fixed or removed (--task-text reads every line)"
        raise BertkitError(_without_reader_options(exc.message), file=exc.file, line=exc.line,
                           expected=expected or None) from None


def _without_reader_options(text: str) -> str:
    """``text`` less its clauses (between ``;``, ``(`` or ``)``) that name a fine-tuning reader
    option ``bertkit adapt`` does not have (``--skip-bad-lines``, ``--text-column``, ...): the
    TAPT text is read whole, with the readers' defaults."""
    import re

    option = r"--(?!task-text\b)[a-z][a-z-]*"
    text = re.sub(rf"\s*\([^()]*{option}[^()]*\)", "", text)  # "(--text-column)"
    text = re.sub(rf"[;,]?\s*(?:or\s+)?[^;,()]*{option}[^;()]*", "", text)
    return text.strip(" ;,")


def _task_text_lines(spec: str, max_examples: int | None) -> list[str]:
    from bertkit.tasks.registry import get_task, task_names

    task, sep, data = spec.partition(":")
    path = Path(spec).expanduser()
    if sep and task in task_names() and not path.exists():
        lines, where = get_task(task).text_lines(data, max_examples), spec
    elif path.is_file():
        lines, where = _from_file(path)[:max_examples], str(path)
    else:
        names = task_names()
        raise BertkitError(f"--task-text {spec!r} is neither TASK:DATA nor a file",
                           expected=", ".join(f"{t}:DATA" for t in names[:-1]) + f" or "
                                    f"{names[-1]}:DATA (e.g. ner:bc5cdr, cls:scicite), or a file: "
                                    f"{FORMATS}")
    out = _distinct(lines)
    if not out:
        raise BertkitError("no text in the task data", file=where,
                           expected="a training split with sentences")
    return out
