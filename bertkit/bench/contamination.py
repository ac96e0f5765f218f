"""Test-set contamination: how many of a task's test sentences occur verbatim in the corpora an
encoder was pretrained on.

The count follows the data README's rule, so that its numbers and the report's agree (BC2GM:
4,864 of 4,939): a sentence is lower-cased and whitespace-tokenised, only sentences of 5 tokens
or more count; a sentence file (CoNLL columns) counts every sentence, a repeated one each time
(BC2GM's test set repeats 9), while a pair or relation set (JSON lines, where one sentence
carries many marked pairs) counts each distinct text once, both texts of a pair; relation
markers (``<< >> [[ ]]``) are dropped. A test sentence is contaminated when
it is a whole line of a corpus file so normalised.

The test texts come from the task (:class:`bertkit.tasks.base.SuiteSpec`'s ``test_texts``, read
with the task's own reader, and ``distinct_texts``); a task that gives none is refused by name,
never counted as 0.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path

from bertkit.errors import BertkitError

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


def split_sentences(task: str, path: Path) -> Counter:
    """The normalised sentences of a test split with how often each counts (see the module
    docstring): the texts the task declares (``SuiteSpec.test_texts``, read with its own
    reader), each sentence every time, or each distinct text once where the task says so
    (``SuiteSpec.distinct_texts``: pair and relation sets).

    Args:
        task: a registered task name.
        path: its test file, or folder of documents (:func:`task_test_file`).

    Raises:
        BertkitError: the task declares no suite or no test text (never counted as 0), or its
            reader refuses the file (file and line named).
    """
    from bertkit.bench.declarations import suite_spec

    spec = suite_spec(task)
    if spec.test_texts is None:
        raise BertkitError(f"task {task!r} declares no test text, so its test sentences cannot "
                           f"be counted in the pretraining corpora", file=path,
                           expected="a SuiteSpec with test_texts (bertkit.tasks.base)")
    out: Counter = Counter()
    for text in spec.test_texts(Path(path)):
        if n := normalise(text):
            out[n] = 1 if spec.distinct_texts else out[n] + 1
    return out


def count(task: str, test_file: Path, corpora: tuple[str, ...]) -> dict:
    """``{"found", "of", "corpora"}``: the test sentences of ``task``'s ``test_file``
    (:func:`split_sentences`) found in any of ``corpora`` (files).

    Raises:
        BertkitError: as :func:`split_sentences`.
    """
    sentences = split_sentences(task, test_file)
    seen: set[str] = set()
    for corpus in corpora:
        if Path(corpus).is_file():
            seen |= set(sentences) & corpus_lines(str(corpus))
    return {"found": sum(sentences[s] for s in seen), "of": sum(sentences.values()),
            "corpora": list(corpora)}


def task_test_file(task: str, data: str) -> Path | None:
    """The test file of a registered set under ``$BERTKIT_DATA`` (or of a data folder), or its
    ``test/`` folder of documents (coreference); None if not found
    (:func:`bertkit.bench.changes.split_source`)."""
    from bertkit.bench.changes import split_source

    return split_source(task, data, "test")
