import numpy as np
import pytest

from bertkit.metrics.cls import best_thresholds, label_scores, multilabel_scores
from bertkit.metrics.collapse import collapse_report
from bertkit.metrics.re import relation_scores

GOLD = ["method", "method", "background", "result", "background", "background"]
PRED = ["method", "background", "background", "result", "method", "background"]


def test_label_scores_by_hand():
    m = label_scores(GOLD, PRED, ["method", "background", "result", "unused"])
    # background: P 2/3 R 2/3; method: P 1/2 R 1/2; result: 1/1
    assert m["macro_f1"] == pytest.approx((2 / 3 + 1 / 2 + 1) / 3)
    assert m["micro_f1"] == pytest.approx(4 / 6) == pytest.approx(m["accuracy"])
    assert m["labels"] == ["background", "method", "result", "unused"]
    assert m["per_label"]["unused"]["support"] == 0
    assert m["confusion"][0] == [2, 1, 0, 0]  # gold background
    assert label_scores([], [])["macro_f1"] == 0.0
    with pytest.raises(ValueError):
        label_scores(["a"], [])


def test_multilabel_scores_by_hand():
    gold = [["a", "b"], ["a"], []]
    pred = [["a"], ["a", "b"], []]
    m = multilabel_scores(gold, pred)
    # a: tp 2 fp 0 fn 0 -> F1 1; b: tp 0 fp 1 fn 1 -> 0
    assert m["macro_f1"] == pytest.approx(0.5)
    assert m["micro_f1"] == pytest.approx(2 * 2 / (3 + 3))
    assert m["accuracy"] == pytest.approx(1 / 3)
    assert m["confusion"] is None


def test_best_thresholds_pick_the_separating_value():
    probs = np.array([[0.9, 0.2], [0.3, 0.25], [0.1, 0.1], [0.35, 0.05]])
    gold = np.array([[1, 1], [1, 0], [0, 0], [1, 0]])
    t = best_thresholds(probs, gold)
    assert 0.1 < t[0] <= 0.3  # all three positives at or above, the negative below
    assert 0.05 < t[1] <= 0.2 or t[1] == pytest.approx(0.2)  # 0.2 catches the one positive
    assert best_thresholds(probs, np.zeros((4, 2)))[0] == 0.5


def test_collapse_single_label_warns_with_baseline():
    gold = ["A"] * 6 + ["B"] * 3 + ["C"]
    pred = ["A"] * 10
    metrics = label_scores(gold, pred)
    r = collapse_report(gold, pred, metrics, lambda g, p: label_scores(g, p))
    assert r["single_label"] and r["at_or_below_baseline"]
    assert r["majority_label"] == "A" and r["majority_share"] == pytest.approx(0.6)
    # constant A: F1(A) = 2*0.6/(1.6), B and C 0, macro over present labels A, B, C
    assert r["baseline_macro_f1"] == pytest.approx(0.75 / 3)
    assert r["baseline_accuracy"] == pytest.approx(0.6)
    assert "collapsed" in r["warning"] and "25.00" in r["warning"]


def test_a_one_label_split_says_so_instead_of_a_nonsense_collapse():
    """Helper trial: PubMedQA's first 50 test answers are all 'yes'; the collapse warning read
    "at or below the majority-class baseline 100.00". A one-label split gets its own note."""
    gold, pred = ["yes"] * 5, ["yes", "no", "yes", "maybe", "yes"]
    r = collapse_report(gold, pred, label_scores(gold, pred), lambda g, p: label_scores(g, p))
    assert not r["at_or_below_baseline"]
    assert r["warning"].startswith("every gold label of this split is 'yes' (5 examples)")
    assert "collapsed" not in r["warning"] and "100.00" not in r["warning"]


def test_a_multi_label_collapse_names_the_empty_set_as_no_label():
    """Helper trial: HoC's majority label set is empty: the warning said "always predicting []"."""
    gold = [(), (), ("a",), ("a", "b")]
    pred = [()] * 4
    r = collapse_report(gold, pred, {"macro_f1": 0.0}, lambda g, p: {"macro_f1": 0.0})
    assert "every prediction is no label" in r["warning"]
    assert "always predicting no label" in r["warning"] and "[]" not in r["warning"]
    r = collapse_report([("a", "b")] * 2 + [()], [("a", "b")] * 3, {"macro_f1": 0.5},
                        lambda g, p: {"macro_f1": 0.5})
    assert "every prediction is the labels 'a' + 'b'" in r["warning"]


def test_no_warning_for_a_good_classifier():
    gold = ["A"] * 6 + ["B"] * 3 + ["C"]
    pred = ["A"] * 5 + ["B"] + ["B"] * 3 + ["C"]
    r = collapse_report(gold, pred, label_scores(gold, pred), lambda g, p: label_scores(g, p))
    assert not r["single_label"] and not r["at_or_below_baseline"] and r["warning"] is None


def test_relation_scores_carry_the_baseline_and_warn(capsys):
    from rich.console import Console

    from bertkit.metrics.collapse import warn_collapse

    gold = ["false"] * 5 + ["CPR:3", "CPR:4"]
    pred = ["false"] * 7
    m = relation_scores(gold, pred, "false")
    # the majority label is the negative one: the constant prediction has macro-F1 0
    assert m["baseline_macro_f1"] == 0.0 and m["baseline"]["single_label"]
    assert m["majority_share"] == pytest.approx(5 / 7)
    assert warn_collapse(m, Console(width=200), "dev") is not None
    out = capsys.readouterr().out
    assert "dev: the classifier may have collapsed" in out and "'false'" in out
    good = relation_scores(gold, ["false"] * 5 + ["CPR:3", "CPR:4"], "false")
    assert warn_collapse(good, Console(width=200)) is None


def test_label_scores_carry_the_baseline():
    gold = ["A"] * 6 + ["B"] * 4
    m = label_scores(gold, ["A"] * 10)
    assert m["baseline"]["at_or_below_baseline"]
    assert m["baseline_macro_f1"] == pytest.approx(m["macro_f1"])


def test_multilabel_baseline_on_label_sets():
    gold = [("a",), ("a",), ("a", "b")]
    pred = [("a",), ("a",), ("a",)]
    m = multilabel_scores(gold, pred)
    assert m["baseline"]["majority_label"] == ["a"] and m["baseline"]["single_label"]
    assert m["baseline"]["multi_label"] and not label_scores(["a", "b"], ["a", "a"])[
        "baseline"]["multi_label"]


def test_every_label_baseline_of_multi_label_data_by_hand_and_its_warning():
    """Helper trial: a HoC model predicting all ten hallmarks scored 25.00 beside a majority
    baseline of 4.30, which read as learning; predicting every label is the yardstick."""
    from rich.console import Console

    from bertkit.outputs.tables import label_scores_table

    gold = [(), ("a",), ("a", "b"), (), ("c",)]
    every = [("a", "b", "c")] * 5
    m = multilabel_scores(gold, every)
    base = m["baseline"]
    # a: tp 2 fp 3 -> P 2/5 R 1 F1 4/7; b: tp 1 fp 4 -> P 1/5 F1 1/3; c: the same as b
    assert base["every_label_macro_f1"] == pytest.approx((4 / 7 + 1 / 3 + 1 / 3) / 3)
    # pooled: tp 4, fp 11, fn 0 -> P 4/15, R 1 -> F1 8/19
    assert base["every_label_micro_f1"] == pytest.approx(8 / 19)
    assert base["at_or_below_baseline"] and "predicting every label for every example" in \
        base["warning"] and base["warning"].startswith("the classifier may have collapsed")
    console = Console(width=120, record=True)
    console.print(label_scores_table(m, "test"))
    text = console.export_text()
    assert "baseline (every label)" in text and f"micro {800 / 19:.2f}" in text
    assert "accuracy (exact set)" in text and "baseline (all: no label)" in text
    assert "its accuracy (acc) or micro-F1 (micro) in the last column, not a support" in \
        " ".join(text.split())  # the caption says what the baseline rows' last cells are
    assert "always predicting no label" in base["warning"]  # both yardsticks in one sentence
    good = multilabel_scores(gold, list(gold))
    assert not good["baseline"]["at_or_below_baseline"] and good["baseline"]["warning"] is None


def test_table_marks_labels_absent_from_gold_and_predictions():
    """A one-label split (a --max-eval-samples cap of a label-sorted file): labels with neither
    gold examples nor predictions show '-' (not F1 0.00 beside macro 100) and the caption says
    macro leaves them out; a label that is predicted but has no gold keeps its 0.00."""
    from rich.console import Console

    from bertkit.metrics.cls import label_scores
    from bertkit.outputs.tables import label_scores_table

    console = Console(record=True, width=140)
    console.print(label_scores_table(label_scores(["yes", "yes"], ["yes", "yes"],
                                                  ["maybe", "no", "yes"]), "test"))
    out = console.export_text()
    assert "│ maybe " in out and "│ no " in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 4}
    assert rows["maybe"].split("│")[4].strip() == "-" and rows["no"].split("│")[4].strip() == "-"
    assert "100.00" in rows["yes"]
    assert "left out of macro" in out
    console = Console(record=True, width=140)
    console.print(label_scores_table(label_scores(["yes", "yes"], ["yes", "no"],
                                                  ["maybe", "no", "yes"]), "test"))
    out = console.export_text()
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 4}
    assert rows["no"].split("│")[4].strip() == "0.00" and rows["maybe"].split("│")[4].strip() == "-"


def test_a_near_constant_prediction_warns_though_it_beats_both_baselines():
    """Helper trial: a HoC model gave 54 of 64 documents one label set (all but one label) and
    scored above the every-label and majority baselines: no warning. 9 of 10 predictions one set
    that the gold never gives is a near-collapse; a model that follows a skewed gold is not."""
    gold = [("a",), ("b",), ("c",), ("a", "b"), ("a", "c"), ("b", "c"), (), ("a",), ("b",),
            ("c",)]
    pred = [("a", "b")] * 9 + [("c",)]
    m = multilabel_scores(gold, pred)
    base = m["baseline"]
    assert base["top_prediction_share"] == pytest.approx(0.9)
    assert base["near_constant"] and not base["single_label"]
    assert "90% of the predictions are the labels 'a' + 'b', which the gold gives to 10%" in \
        base["warning"]
    skewed = ["yes"] * 9 + ["no"]  # the gold's own share: no warning
    follows = label_scores(skewed, ["yes"] * 9 + ["no"])["baseline"]
    assert follows["top_prediction_share"] == pytest.approx(0.9)
    assert not follows["near_constant"] and follows["warning"] is None
    assert not label_scores(GOLD, GOLD)["baseline"]["near_constant"]
