"""Test-set contamination: how many of a task's test sentences occur verbatim in the corpora an
encoder was pretrained on.

The count follows the data README's rule, so that its numbers and the report's agree (BC2GM:
4,864 of 4,939): a sentence is lower-cased and whitespace-tokenised, only sentences of 5 tokens
or more count; a sentence file (CoNLL columns) counts every sentence, a repeated one each time
(BC2GM's test set repeats 9), while a pair or relation set (JSON lines, where one sentence
carries many marked pairs) counts each distinct text once, both texts of a pair; relation
markers (``<< >> [[ ]]``) are dropped. A test sentence is contaminated when
it is a whole line of a corpus file so normalised.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

MIN_TOKENS = 5
MARKERS = {"<<", ">>", "[[", "]]"}


def normalise(text: str) -> str | None:
    """The comparable form of a sentence, or None when it is shorter than :data:`MIN_TOKENS`.

    >>> normalise("The << BRCA1 >> gene  is   mutated here")
    'the brca1 gene is mutated here'
    """
    tokens = [t for t in text.lower().split() if t not in MARKERS]
    return " ".join(tokens) if len(tokens) >= MIN_TOKENS else None


@lru_cache(maxsize=4)
def corpus_lines(path: str) -> frozenset[str]:
    """The normalised lines of a corpus file (cached: a suite asks once per task)."""
    out = set()
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            n = normalise(line)
            if n:
                out.add(n)
    return frozenset(out)


def split_sentences(path: Path) -> Counter:
    """The normalised sentences of a test file with how often each counts (see the module
    docstring): CoNLL-style columns (first or, for CoNLL-U, second column; blank lines between
    sentences), CoNLL-2012 documents (fourth column, ``#begin document`` files; a folder of them,
    as LitBank's test split), each sentence every time; JSON lines (``text``, ``text_pair``),
    each distinct text once. Other formats give an empty Counter."""
    out: Counter = Counter()
    if path.is_dir():  # a split held as one document per file (coreference)
        for child in sorted(path.iterdir()):
            if child.is_file():
                out += split_sentences(child)
        return out
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if lines and lines[0].startswith("#begin document"):  # CoNLL-2012: doc part index word ...
        words: list[str] = []
        for line in lines + [""]:
            cols = line.split()
            if len(cols) >= 4 and not line.startswith("#"):
                words.append(cols[3])
            elif words:
                if n := normalise(" ".join(words)):
                    out[n] += 1
                words = []
        return out
    if path.suffix == ".jsonl":
        for line in lines:
            if line.strip():
                row = json.loads(line)
                for key in ("text", "text_pair"):
                    if isinstance(row.get(key), str) and (n := normalise(row[key])):
                        out[n] = 1
        return out
    if path.suffix not in (".tsv", ".conll", ".txt", ".conllu", ".iob2", ".bio"):
        return out
    column = 1 if path.suffix == ".conllu" else 0
    words: list[str] = []
    for line in lines + [""]:
        if not line.strip() or line.startswith("-DOCSTART-"):
            if words and (n := normalise(" ".join(words))):
                out[n] += 1
            words = []
        elif not line.startswith("#"):
            cols = line.split("\t") if "\t" in line else line.split()
            if len(cols) > column and (column == 0 or cols[0].isdigit()):
                words.append(cols[column])
    return out


def count(test_file: Path, corpora: tuple[str, ...]) -> dict:
    """``{"found", "of", "corpora"}``: test sentences found in any of ``corpora`` (files)."""
    sentences = split_sentences(test_file)
    seen: set[str] = set()
    for corpus in corpora:
        if Path(corpus).is_file():
            seen |= set(sentences) & corpus_lines(str(corpus))
    return {"found": sum(sentences[s] for s in seen), "of": sum(sentences.values()),
            "corpora": list(corpora)}


def task_test_file(task: str, data: str) -> Path | None:
    """The test file of a registered set under ``$BERTKIT_DATA``, or its ``test/`` folder of
    documents (coreference); None if not found."""
    from bertkit.data.sets import data_root, resolve_local
    from bertkit.errors import BertkitError
    from bertkit.tasks.registry import get_task

    try:
        files = resolve_local(data, task, tuple(get_task(task).extensions), ("test",))
    except (BertkitError, AttributeError):
        files = None
    if files:
        return files["test"]
    base = Path(data) if Path(data).is_dir() else (data_root() / task / data if data_root() else None)
    folder = base / "test" if base is not None else None
    return folder if folder is not None and folder.is_dir() else None  # one file per document
