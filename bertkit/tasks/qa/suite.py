"""What ``bertkit bench`` needs to enter extractive question answering in a suite
(:class:`~bertkit.tasks.base.SuiteSpec`): SQuAD token F1 (the official scorer, in points;
Rajpurkar et al. 2016; no per-item statistics, so no paired bootstrap); the test contexts and
questions, each distinct one once (SQuAD asks several questions of a paragraph); the family.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.tasks.base import SuiteMetric, SuiteSpec
from bertkit.tasks.qa.data import read_qa_file


def texts(path: Path) -> list[str]:
    """The test file's contexts and questions (the task's reader: SQuAD JSON or JSON lines).

    Raises:
        BertkitError: a file the reader refuses (file and line named).
    """
    examples = read_qa_file(path)
    return [x.context for x in examples] + [x.question for x in examples]


SUITE = SuiteSpec(
    metrics=(SuiteMetric("squad_f1", "f1", "SQuAD token F1 (official scorer, points)",
                         scale=1.0),),
    families={"qa": "question answering (BLURB)"},
    test_texts=texts, distinct_texts=True)
"""Question answering's suite declaration (``QATask.suite``)."""
