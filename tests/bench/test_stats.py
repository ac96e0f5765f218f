"""The suite score, seed summaries, almost stochastic order and the paired bootstrap, on numbers
made by hand."""

from __future__ import annotations

import numpy as np
import pytest

from bertkit.bench import stats
from bertkit.bench.declarations import METRICS

# Gu et al. 2021 (BLURB), Table 6, PubMedBERT, per task; the paper's BLURB score is 81.16
PUBMEDBERT = {"bc5-chem": 93.33, "bc5-disease": 85.62, "ncbi-disease": 87.82, "bc2gm": 84.52,
              "jnlpba": 79.10, "ebmnlp": 73.38, "chemprot": 77.24, "ddi": 82.36, "gad": 83.96,
              "biosses": 92.30, "hoc": 82.32, "pubmedqa": 55.84, "bioasq": 87.56}
FAMILIES = {"bc5-chem": "ner", "bc5-disease": "ner", "ncbi-disease": "ner", "bc2gm": "ner",
            "jnlpba": "ner", "ebmnlp": "pico", "chemprot": "re", "ddi": "re", "gad": "re",
            "biosses": "similarity", "hoc": "doc-cls", "pubmedqa": "qa", "bioasq": "qa"}


def test_the_blurb_score_of_pubmedbert_is_the_papers():
    assert round(stats.suite_score(PUBMEDBERT, FAMILIES), 2) == 81.16
    # a plain mean over the 13 tasks would give another number: the families are weighted
    assert round(sum(PUBMEDBERT.values()) / 13, 2) == 81.95


def test_family_means_leave_out_tasks_without_a_score():
    means = stats.family_means({"a": 80.0, "b": float("nan"), "c": 60.0},
                               {"a": "ner", "b": "ner", "c": "re"})
    assert means == {"ner": 80.0, "re": 60.0}


def test_summary_is_mean_sample_sd_and_n():
    assert stats.summary([70.0, 72.0, 74.0]) == {"mean": 72.0, "sd": 2.0, "n": 3}
    assert stats.summary([5.0]) == {"mean": 5.0, "sd": 0.0, "n": 1}


@pytest.mark.slow  # deepsig's import and bootstrap take ~10 s on the shared CPU
def test_aso_finds_a_clear_winner_and_no_order_between_equals():
    better = [80.1, 80.5, 79.9, 80.3, 80.2]
    worse = [75.2, 74.9, 75.6, 75.1, 74.8]
    assert stats.aso(better, worse, iterations=200) < 0.05
    assert stats.aso(worse, better, iterations=200) > 0.95
    a, b = [80.0, 80.4, 79.8, 80.2, 80.1], [80.1, 79.9, 80.3, 80.0, 80.2]
    # eps_min is an upper bound at 95% confidence: with five seeds of equal runs neither side
    # can be called larger (the bound stays above the threshold both ways)
    assert stats.aso(a, b, iterations=200) > stats.ASO_THRESHOLD and stats.aso(b, a, iterations=200) > stats.ASO_THRESHOLD


def test_aso_needs_two_seeds_a_side():
    with pytest.raises(ValueError):
        stats.aso([1.0], [2.0, 3.0])


def _accuracy_items(correct: list[int]) -> np.ndarray:
    return np.asarray([(c, 1.0) for c in correct], dtype=float)


def test_the_paired_bootstrap_of_a_clear_gain():
    a = [_accuracy_items([1] * 100), _accuracy_items([1] * 90 + [0] * 10)]  # 1.00, 0.90
    b = [_accuracy_items([1] * 50 + [0] * 50)] * 2  # 0.50 twice
    out = stats.paired_bootstrap(a, b, METRICS["accuracy"].score, samples=500, seed=1)
    assert out["delta"] == pytest.approx(0.45)
    assert out["p"] == 0.0 and 0.3 < out["low"] < 0.45 < out["high"] < 0.6


def test_the_paired_bootstrap_of_identical_predictions_is_zero():
    a = [_accuracy_items([1, 0, 1, 1, 0, 1])]
    out = stats.paired_bootstrap(a, a, METRICS["accuracy"].score, samples=200)
    assert out == {"delta": 0.0, "low": 0.0, "high": 0.0, "p": 1.0}


def test_the_paired_bootstrap_pairs_items():
    # A is right on exactly the items B gets wrong, and the other way round on one item: the
    # difference is tiny and the same items are drawn for both sides, so its interval is narrow
    a = [_accuracy_items([1] * 50 + [0] * 50)]
    b = [_accuracy_items([1] * 49 + [0] * 51)]
    out = stats.paired_bootstrap(a, b, METRICS["accuracy"].score, samples=500, seed=3)
    assert out["delta"] == pytest.approx(0.01)
    assert out["low"] >= 0.0 and out["high"] <= 0.04  # one item differs: 0 or a few of it
    assert out["p"] > 0.2  # one item is no evidence


def test_the_bootstrap_refuses_runs_over_different_items():
    with pytest.raises(ValueError, match="different numbers of test items"):
        stats.paired_bootstrap([_accuracy_items([1, 0])], [_accuracy_items([1])],
                               METRICS["accuracy"].score)


@pytest.mark.parametrize("a, b, eps, p, expected", [
    ((75.0, 1.0), (74.5, 1.0), 0.0, 0.0, "none"),  # inside the seed spread: no gain
    ((80.0, 0.5), (75.0, 0.5), 0.01, 0.001, "better"),
    ((70.0, 0.5), (75.0, 0.5), 0.01, 0.001, "worse"),
    ((80.0, 0.5), (75.0, 0.5), 0.45, 0.001, "none"),  # ASO does not support it
    ((80.0, 0.5), (75.0, 0.5), 0.05, 0.30, "none"),  # the bootstrap does not
    # review: one-sided p 0.04 passed while the report's 95% interval held zero (-0.05 .. +0.84)
    ((80.0, 0.5), (75.0, 0.5), 0.05, 0.04, "none"),
    ((80.0, 0.5), (75.0, 0.5), 0.05, 0.02, "better"),
    ((80.0, 0.5), (75.0, 0.5), None, None, "better"),  # one seed a side: the spread alone
])
def test_the_verdict(a, b, eps, p, expected):
    sa = {"mean": a[0], "sd": a[1], "n": 3}
    sb = {"mean": b[0], "sd": b[1], "n": 3}
    assert stats.verdict(sa, sb, eps, p) == expected


def test_one_seed_shows_no_spread():
    """Helper trial: one seed read "80.00 ± 0.00 (n=1)", a spread it does not have."""
    from bertkit.bench.report import _pm

    assert _pm({"mean": 80.0, "sd": 0.0, "n": 1}) == "80.00 (n=1)"
    assert _pm({"mean": 80.0, "sd": 1.5, "n": 3}) == "80.00 ± 1.50 (n=3)"
    assert _pm(None) == "-"


def _records(encoder, scores, metric="las"):
    return [{"encoder": encoder, "task": "dep", "seed": i + 1, "score": s, "metric": metric,
             "task_kind": "dep"} for i, s in enumerate(scores)]


def test_a_single_seed_comparison_gets_no_verdict(tmp_path):
    """Review: JNLPBA G+G with one seed read "better" against three seeds of G+D; one seed has no
    spread, so the comparison shows its difference of means and no verdict."""
    from bertkit.bench.report import compare

    one = compare(_records("A", [90.0]), _records("B", [80.0, 80.5, 79.5]), tmp_path)
    assert one["verdict"] == "none (fewer than 2 seeds)"
    assert one["delta"] == pytest.approx(10.0) and one["eps_min"] is None
    # the same gap with three seeds a side is a verdict (LAS has no bootstrap: spread and ASO)
    three = compare(_records("A", [90.0, 90.5, 89.5]), _records("B", [80.0, 80.5, 79.5]),
                    tmp_path)
    assert three["verdict"] == "better" and three["eps_min"] == pytest.approx(0.0)
