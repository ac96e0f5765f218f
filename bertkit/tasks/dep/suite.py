"""What ``bertkit bench`` needs to enter dependency parsing in a suite
(:class:`~bertkit.tasks.base.SuiteSpec`): LAS and UAS, punctuation excluded (SciBERT on GENIA,
Beltagy et al. 2019; no per-item statistics, so no paired bootstrap); the test sentences; the
family.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.data.conllu import read_conllu
from bertkit.tasks.base import SuiteMetric, SuiteSpec


def sentence_texts(path: Path) -> list[str]:
    """The test file's sentences (the task's CoNLL-U reader: the word forms of the integer-id
    lines), words joined by spaces.

    Raises:
        BertkitError: a file the reader refuses (file and line named).
    """
    return [" ".join(s.words) for s in read_conllu(path, labelled=False)]


SUITE = SuiteSpec(
    metrics=(SuiteMetric("las", "las", "labelled attachment score, punctuation excluded"),
             SuiteMetric("uas", "uas", "unlabelled attachment score, punctuation excluded")),
    families={"dep": "dependency parsing (SciBERT)"},
    test_texts=sentence_texts)
"""Dependency parsing's suite declaration (``DepTask.suite``)."""
