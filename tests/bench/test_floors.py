"""bench report's constant-prediction check (bertkit/bench/floors.py) on hand-made stage
records: each rule fires on the figures a collapsed run writes, judged on the suite's metric, and
stays quiet on a learnt one."""

from __future__ import annotations

import pytest

from bertkit.bench.floors import collapse_warning, describe, floor_reason


@pytest.mark.parametrize("metric, test, phrase", [
    # PubMedQA at the lite budget: the majority class for every question
    ("accuracy", {"accuracy": 0.552, "majority_share": 0.552, "macro_f1": 0.2371},
     "accuracy at or below the majority class's share (accuracy 55.20, share 55.20)"),
    ("macro_f1", {"macro_f1": 0.2371134, "baseline_macro_f1": 0.2371134},
     "macro-F1 at or below always predicting the majority class (macro-F1 23.71, the "
     "majority class's 23.71)"),
    # an RE model predicting no relation anywhere (the negative class is not scored)
    ("micro_f1", {"micro_f1": 0.0, "macro_f1": 0.0, "baseline_macro_f1": 0.0},
     "no relation found, as always predicting the negative class (micro-F1 0.00)"),
    # HoC: every hallmark for every abstract, and nearly so (lite seeds 1 and 4)
    ("hoc_f1", {"hoc_recall": 1.0, "hoc_precision": 0.1305, "hoc_f1": 0.2309},
     "(nearly) every label for every document (hoc recall 1.00, precision 0.13)"),
    ("hoc_f1", {"hoc_recall": 0.948, "hoc_precision": 0.1339, "hoc_f1": 0.2346},
     "(nearly) every label for every document (hoc recall 0.95, precision 0.13)"),
    # BIOSSES: no positive correlation, or one value for every pair
    ("pearson", {"pearson": -0.2769, "mse": 3.92, "baseline_mse": 1.55, "constant": False},
     "no positive correlation, a constant prediction's 0 (Pearson -0.28)"),
    ("pearson", {"pearson": 0.0, "constant": True}, "every prediction the same"),
    # issue 66 item 7: the gold that is constant is named as such, not as the predictions
    ("pearson", {"constant": True, "constant_gold": True},
     "every gold score the same: no correlation is defined"),
])
def test_a_run_at_a_constant_predictions_level_is_named(metric, test, phrase):
    assert phrase in floor_reason({"metric": metric, "test": test})


@pytest.mark.parametrize("metric, test", [
    ("accuracy", {"accuracy": 0.61, "majority_share": 0.552}),
    ("macro_f1", {"macro_f1": 0.61, "baseline_macro_f1": 0.2371}),
    # DDI at the lite budget: accuracy under always-`false` (0.826 < 0.829), yet relations
    # found: micro-F1 2.5, judged on the suite's metric, not a constant prediction's
    ("micro_f1", {"micro_f1": 0.0253, "accuracy": 0.826, "majority_share": 0.829}),
    # a partly learnt HoC model: exact-set accuracy under the commonest label set's share
    ("hoc_f1", {"hoc_recall": 0.45, "hoc_precision": 0.39, "accuracy": 0.154,
                "majority_share": 0.159}),
    ("hoc_f1", {"hoc_recall": 1.0, "hoc_precision": 0.8}),
    # Pearson 0.90 with badly scaled predictions (an MSE above the mean's) is learnt
    ("pearson", {"pearson": 0.9, "mse": 2.0, "baseline_mse": 1.55, "constant": False}),
    ("entity_f1", {"f1": 0.85}),  # NER: no constant baseline
    ("accuracy", {}),
])
def test_a_learnt_run_is_not(metric, test):
    assert floor_reason({"metric": metric, "test": test}) is None


def test_the_tasks_own_warning_is_the_fallback_and_a_one_label_split_is_not_a_collapse():
    warning = "the classifier may have collapsed: 93% of the predictions are 'a'"
    assert floor_reason({"metric": "macro_f1", "collapse": warning,
                         "test": {"macro_f1": 0.4, "baseline_macro_f1": 0.2}}) == warning
    assert floor_reason({"metric": "macro_f1", "collapse": None, "test": 5}) is None
    assert floor_reason({"metric": "accuracy", "test": {"accuracy": "x"}}) is None
    assert collapse_warning({"baseline": {"warning": warning}}) == warning
    assert collapse_warning({"baseline": {"warning": "every gold label ...",
                                          "one_gold_label": True}}) is None
    assert collapse_warning({"f1": 0.8}) is None and collapse_warning(None) is None


def test_the_report_phrase_groups_the_seeds_and_gives_each_ones_figures():
    same = "accuracy at or below the majority class's share (accuracy 55.20, share 55.20)"
    assert describe([same] * 3, [1, 2, 3]) == f"3 of 3 seeds: {same}"
    pearson = "no positive correlation, a constant prediction's 0"
    assert describe([f"{pearson} (Pearson -0.28)", None, f"{pearson} (Pearson -0.05)"],
                    [1, 2, 3]) == \
        f"2 of 3 seeds: {pearson} (seed 1: Pearson -0.28; seed 3: Pearson -0.05)"
    assert describe(["the classifier may have collapsed: x"], [4]) == \
        "1 of 1 seed: the classifier may have collapsed: x"


def test_a_similarity_run_below_its_encoders_zero_shot_score_is_named():
    from bertkit.bench.floors import zero_shot_reason

    # issue 63: the cross-encoder on BIOSSES (8.36) against MiniLM's zero-shot cosine (84.69)
    below = {"metric": "pearson", "test": {"pearson": 0.0836, "zero_shot_pearson": 0.8469}}
    assert zero_shot_reason(below) == ("below the encoder's zero-shot score (Pearson 8.36, "
                                       "zero-shot 84.69)")
    assert floor_reason(below) is None  # a learnt correlation, just a worse one
    assert zero_shot_reason({"metric": "pearson", "test": {"pearson": 0.87,
                                                           "zero_shot_pearson": 0.8469}}) is None
    assert zero_shot_reason({"metric": "pearson", "test": {"pearson": 0.2}}) is None  # no row
    assert describe([zero_shot_reason(below), None], [1, 2]) == (
        "1 of 2 seeds: below the encoder's zero-shot score (Pearson 8.36, zero-shot 84.69)")


def test_the_report_names_similarity_runs_below_the_zero_shot_score(tmp_path):
    """The committed lite run's BIOSSES stages (a cross-encoder, before issue 63) given the
    zero-shot figure every finetune sim run now keeps: the report names each seed below it."""
    import json
    import shutil
    from pathlib import Path

    from bertkit.bench.report import build, markdown

    source = Path(__file__).resolve().parents[2] / "benchmarks/results/blurb/lite-minilm"
    out = tmp_path / "lite"
    shutil.copytree(source, out)
    assert "zero-shot score" not in markdown(build(out))  # records without the figure
    for stage in sorted((out / "stages/minilm/biosses").glob("seed-*.json")):
        record = json.loads(stage.read_text())
        record["test"]["zero_shot_pearson"] = 0.8469
        stage.write_text(json.dumps(record))
    report = build(out)
    assert report["encoders"]["minilm"]["tasks"]["biosses"]["below_zero_shot"][0] == (
        "below the encoder's zero-shot score (Pearson -27.69, zero-shot 84.69)")
    assert "Below the encoder's zero-shot score" in markdown(report)
    assert "minilm on biosses, 5 of 5 seeds: below the encoder's zero-shot score" in \
        markdown(report)
