"""A task's training text, unlabelled, for task-adaptive pretraining (TAPT).

TAPT (Gururangan et al., 2020, "Don't Stop Pretraining", sec. 4) continues the masked-LM
objective on the unlabelled text of the task's own training split before fine-tuning. The text is
read through the same readers as fine-tuning (:mod:`bertkit.data.conll`,
:mod:`bertkit.data.relations` with the entity markers stripped, :mod:`bertkit.data.conllu`) and
the same split logic (GENIA's train split is ``dev.conllu`` less every tenth sentence), so TAPT
never sees a sentence that fine-tuning evaluates on.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.errors import BertkitError

TASKS = ("ner", "re", "dep")


def _distinct(lines) -> list[str]:
    """Non-empty lines, whitespace-normalised, first occurrence kept (a ChemProt sentence holds
    several entity pairs and would otherwise be repeated once per pair)."""
    return list(dict.fromkeys(" ".join(line.split()) for line in lines if line and line.strip()))


def _from_file(path: Path) -> list[str]:
    from bertkit.data.conll import looks_like_conll, read_conll, read_lines

    suffix = "".join(path.suffixes[-1:]).lower()
    if suffix == ".conllu":
        from bertkit.data.conllu import read_conllu

        return [" ".join(s.words) for s in read_conllu(path, labelled=False)]
    if suffix in (".jsonl", ".json"):
        from bertkit.data.relations import read_relations

        return [ex.text for ex in read_relations(path, labelled=False).examples]
    if looks_like_conll(path):
        return [" ".join(s.tokens) for s in read_conll(path, labelled=False).sentences]
    return [text for _, text in read_lines(path)]


def task_text_lines(spec: str, max_examples: int | None = None) -> list[str]:
    """The training sentences of a task data set as plain text lines (TAPT input).

    Args:
        spec: ``TASK:DATA`` with TASK ``ner``, ``re`` or ``dep`` and DATA a registered set
            (``ner:bc5cdr``, ``re:chemprot``, ``dep:genia``; under ``$BERTKIT_DATA``) or a
            directory with the task's split files; or a file: ``.conllu`` (CoNLL-U words),
            ``.jsonl`` (relation JSONL, markers stripped), a CoNLL token/tag file, or plain text
            (one sentence a line).
        max_examples: read only the first N training examples (sentences; relation pairs
            before their shared sentences are merged), as fine-tuning's
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
    spec = str(spec)
    task, sep, data = spec.partition(":")
    path = Path(spec).expanduser()
    if sep and task in TASKS and not path.exists():
        if task == "ner":
            from bertkit.tasks.ner.data import load_ner_data

            lines = [" ".join(s.tokens) for s in load_ner_data(data, ("train",)).splits["train"]]
        elif task == "re":
            from bertkit.tasks.re.data import load_re_data

            lines = [ex.text for ex in load_re_data(data, ("train",)).splits["train"]]
        else:
            from bertkit.tasks.dep.data import load_dep_data

            lines = [" ".join(s.words) for s in load_dep_data(data, ("train",)).splits["train"]]
        where = spec
    elif path.is_file():
        lines, where = _from_file(path), str(path)
    else:
        raise BertkitError(f"--task-text {spec!r} is neither TASK:DATA nor a file",
                           expected="ner:DATA, re:DATA, dep:DATA (e.g. ner:bc5cdr) or a "
                                    "CoNLL, JSONL, CoNLL-U or text file")
    out = _distinct(lines[:max_examples])
    if not out:
        raise BertkitError("no text in the task data", file=where,
                           expected="a training split with sentences")
    return out
