"""bench report's constant-prediction check (bertkit/bench/floors.py) on hand-made stage
records: each rule fires on the figures a collapsed run writes and stays quiet on a learnt one."""

from __future__ import annotations

import pytest

from bertkit.bench.floors import collapse_warning, floor_reason


@pytest.mark.parametrize("test, phrase", [
    # PubMedQA at the lite budget: the majority class for every question
    ({"macro_f1": 0.2371134, "baseline_macro_f1": 0.2371134, "accuracy": 0.552},
     "macro-F1 23.71 at or below always predicting the majority class's 23.71"),
    # an RE model predicting no relation anywhere (the negative class is not scored)
    ({"macro_f1": 0.0, "baseline_macro_f1": 0.0, "micro_f1": 0.0}, "macro-F1 0.00 at or below"),
    # HoC: every hallmark for every abstract
    ({"hoc_recall": 1.0, "hoc_precision": 0.1305, "macro_f1": 0.225, "baseline_macro_f1": 0.0},
     "every label predicted for every document (hoc recall 1.00, precision 0.13)"),
    # BIOSSES: worse than predicting the gold mean for every pair
    ({"pearson": -0.27, "mse": 3.9248, "baseline_mse": 1.5524, "constant": False},
     "MSE 3.925 at or above predicting the gold mean for every pair (1.552)"),
    ({"pearson": 0.0, "mse": 2.0, "baseline_mse": 1.5, "constant": True},
     "every prediction the same"),
])
def test_a_collapsed_run_is_named(test, phrase):
    assert phrase in floor_reason({"test": test})


@pytest.mark.parametrize("test", [
    {"macro_f1": 0.61, "baseline_macro_f1": 0.2371},
    {"macro_f1": 0.04, "baseline_macro_f1": 0.0, "micro_f1": 0.067},  # poor, not constant
    {"hoc_recall": 1.0, "hoc_precision": 0.8},  # a good multi-label model
    {"pearson": 0.8, "mse": 0.4, "baseline_mse": 1.5, "constant": False},
    {"f1": 0.85},  # NER: no baseline figures
    {},
])
def test_a_learnt_run_is_not(test):
    assert floor_reason({"test": test}) is None


def test_the_tasks_own_warning_comes_first_and_a_one_label_split_is_not_a_collapse():
    warning = "the classifier may have collapsed: every prediction is 'false'"
    assert floor_reason({"collapse": warning, "test": {"macro_f1": 0.9}}) == warning
    assert floor_reason({"collapse": None, "test": {"macro_f1": 0.1,
                                                    "baseline_macro_f1": 0.2}}).startswith("macro")
    assert collapse_warning({"baseline": {"warning": warning}}) == warning
    assert collapse_warning({"baseline": {"warning": "every gold label ...",
                                          "one_gold_label": True}}) is None
    assert collapse_warning({"f1": 0.8}) is None and collapse_warning(None) is None
