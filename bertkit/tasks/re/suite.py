"""What ``bertkit bench`` needs to enter relation extraction in a suite
(:class:`~bertkit.tasks.base.SuiteSpec`): micro-F1 without the negative class (BLURB's relation
metric, Gu et al. 2021), macro-F1 (SciBERT on SciERC relations) and accuracy, scored per test pair
from ``test_predictions.jsonl`` (:mod:`bertkit.tasks.suite_metrics`); the test sentences, each
distinct one once (a sentence carries many marked pairs); the family.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.data.relations import read_relations
from bertkit.tasks.base import SuiteSpec
from bertkit.tasks.suite_metrics import ACCURACY, MACRO_F1, MICRO_F1


def sentence_texts(path: Path) -> list[str]:
    """The test pairs' sentences (the task's relation reader: markers removed), one a pair.

    Raises:
        BertkitError: a file the reader refuses (file and line named).
    """
    return [x.text for x in read_relations(path, labelled=False).examples]


SUITE = SuiteSpec(metrics=(MICRO_F1, MACRO_F1, ACCURACY),
                  families={"re": "relation extraction (BLURB)"},
                  test_texts=sentence_texts, distinct_texts=True)
"""Relation extraction's suite declaration (``RETask.suite``)."""
