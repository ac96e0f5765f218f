"""The official SQuAD scorers (v1.1, v2.0) on hand-computed cases."""

import pytest

from bertkit.metrics.qa import (best_threshold, exact_match, normalize_answer, squad_scores,
                                token_f1)


def test_normalisation_lowercases_drops_punctuation_articles_and_spaces():
    assert normalize_answer("  The Denver-Broncos,  a team!") == "denverbroncos team"
    assert normalize_answer("An apple; the end.") == "apple end"
    # articles only as whole words; non-ASCII punctuation is kept (string.punctuation only)
    assert normalize_answer("Theatre anthem") == "theatre anthem"
    assert normalize_answer("«Paris»") == "«paris»"


def test_exact_and_f1_hand_computed():
    assert exact_match("The Broncos", "broncos!") == 1
    # gold "denver broncos" (2), pred "broncos won" (2): 1 shared -> P = R = 1/2, F1 = 0.5
    assert token_f1("Denver Broncos", "the Broncos won") == pytest.approx(0.5)
    # gold 3 tokens, pred 1 token shared: P = 1, R = 1/3 -> F1 = 2 * 1/3 / (4/3) = 0.5
    assert token_f1("Santa Clara University", "Clara") == pytest.approx(0.5)
    # repeated tokens count as a bag: gold "a b b" -> [b, b]; pred "b" -> P 1, R 1/2, F1 2/3
    assert token_f1("a b b", "b") == pytest.approx(2 / 3)
    assert token_f1("x", "y") == 0.0


def test_empty_answers_differ_between_versions():
    assert token_f1("", "", "2.0") == 1.0 and token_f1("", "", "1.1") == 0.0
    assert token_f1("", "something", "2.0") == 0.0


def test_v11_max_over_gold_and_missing_prediction_scores_zero():
    gold = {"q1": ["Denver Broncos", "Broncos"], "q2": ["Santa Clara"], "q3": ["1990"]}
    preds = {"q1": "the Broncos", "q2": "Clara"}  # q3 missing
    out = squad_scores(gold, preds, "1.1")
    # q1: EM 1 (max over gold), F1 1; q2: EM 0, F1 2*(1)(1/2)/(1.5) = 2/3; q3: 0, 0
    assert out["exact"] == pytest.approx(100 / 3)
    assert out["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert out["total"] == 3 and out["missing"] == 1


def test_v2_split_and_fixed_scores():
    gold = {"a": ["Paris"], "b": [], "c": ["1990", "in 1990"], "d": []}
    preds = {"a": "Paris", "b": "", "c": "", "d": "London"}
    out = squad_scores(gold, preds, "2.0")
    # a right, b right (empty for unanswerable), c wrong (empty), d wrong (answered)
    assert out["exact"] == 50.0 and out["f1"] == 50.0 and out["total"] == 4
    assert (out["HasAns_exact"], out["HasAns_total"]) == (50.0, 2)
    assert (out["NoAns_exact"], out["NoAns_total"]) == (50.0, 2)


def test_v2_best_threshold_sweep_hand_computed():
    gold = {"a": ["Paris"], "b": [], "c": ["1990"], "d": []}
    spans = {"a": "Paris", "b": "Rome", "c": "1990", "d": "London"}
    # no-answer score differences: answer iff diff <= t
    na = {"a": -2.0, "b": 3.0, "c": 1.0, "d": -1.0}
    # sweep in order a(-2) d(-1) c(1) b(3), starting from all empty = 2 right (b, d):
    # +a -> 3 (t=-2); +d -> 2; +c -> 3 (not better); +b -> 2: best 3/4 at t = -2
    best, t = best_threshold(spans, {"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}, na,
                             {"a": True, "b": False, "c": True, "d": False})
    assert (best, t) == (75.0, -2.0)
    given = {q: "" if na[q] > 0.0 else spans[q] for q in gold}  # threshold 0
    out = squad_scores(gold, given, "2.0", na_scores=na, span_predictions=spans)
    # at threshold 0: a right, d wrong ("London"), c empty (wrong), b empty (right) = 50
    assert out["exact"] == 50.0
    assert out["best_exact"] == 75.0 and out["best_exact_thresh"] == -2.0
    assert out["best_f1"] == 75.0 and out["best_f1_thresh"] == -2.0


def test_best_threshold_all_empty_when_nothing_helps():
    best, t = best_threshold({"b": "x"}, {"b": 0.0}, {"b": 1.0}, {"b": False})
    assert (best, t) == (100.0, 0.0)
