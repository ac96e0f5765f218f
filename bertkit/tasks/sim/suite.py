"""What ``bertkit bench`` needs to enter sentence similarity in a suite
(:class:`~bertkit.tasks.base.SuiteSpec`): Pearson's r (BLURB on BIOSSES, Gu et al. 2021) from
per-pair moments, its constant-prediction floor and the zero-shot check (issue 63); the test
texts, each distinct one once; the family; and the ``architecture`` a suite entry may set
(``finetune sim --architecture``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertkit.metrics.items import moments, pearson
from bertkit.tasks.base import SuiteMetric, SuiteSpec
from bertkit.tasks.sim.config import ARCHITECTURES
from bertkit.tasks.sim.data import read_pairs
from bertkit.tasks.suite_metrics import TOLERANCE, figure, prediction_rows


def pearson_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 6]``: x, y, xy, x², y², 1 of each pair (gold ``score``/``label``, ``predicted``).
    The predictions file holds scores to 6 decimals: where the predictions barely vary (an
    untrained model) r from it can differ from the task's own; on trained models it agrees."""
    rows = prediction_rows(run_dir)
    x = np.asarray([float(r.get("score", r.get("label"))) for r in rows])
    y = np.asarray([float(r["predicted"]) for r in rows])
    return moments(x, y)


def pearson_floor(test: dict) -> str | None:
    """Every gold score the same, every prediction the same, or Pearson at or below 0 (a
    constant prediction's), or None."""
    r = figure(test, "pearson")
    if test.get("constant_gold") is True:  # the gold's side, not the run's
        return "every gold score the same: no correlation is defined"
    if test.get("constant") is True or (r is not None and r <= TOLERANCE):
        return ("every prediction the same" if test.get("constant") is True else
                f"no positive correlation, a constant prediction's 0 (Pearson {r:.2f})")
    return None


def below_zero_shot(test: dict) -> str | None:
    """Pearson below the encoder's zero-shot Pearson (``zero_shot_pearson``: the cosine of its
    pooled embeddings, no training), or None: fine-tuning made the encoder worse than it came
    (issue 63: the cross-encoder on BIOSSES, 8.36 against 84.69)."""
    r, zero = figure(test, "pearson"), figure(test, "zero_shot_pearson")
    if r is None or zero is None or r >= zero - TOLERANCE:
        return None
    return (f"below the encoder's zero-shot score (Pearson {100 * r:.2f}, zero-shot "
            f"{100 * zero:.2f})")


def texts(path: Path) -> list[str]:
    """The test pairs' two texts (the task's pair reader), one a text.

    Raises:
        BertkitError: a file the reader refuses (file and line named).
    """
    pairs, _ = read_pairs(path, labelled=False)
    return [t for x in pairs for t in (x.text, x.text_pair)]


SUITE = SuiteSpec(
    metrics=(SuiteMetric("pearson", "pearson", "Pearson correlation of predicted and gold "
                         "scores (BLURB's similarity metric)", stats=pearson_stats,
                         score=pearson, floor=pearson_floor, zero_shot=below_zero_shot),),
    families={"similarity": "sentence similarity (BLURB)"},
    test_texts=texts, distinct_texts=True, settings={"architecture": ARCHITECTURES})
"""Sentence similarity's suite declaration (``SimTask.suite``)."""
