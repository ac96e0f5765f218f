"""RE and cls share one scorer (bertkit.metrics.cls.label_table); RE's output is unchanged."""

import pytest

from bertkit.metrics.cls import label_scores, label_table
from bertkit.metrics.re import _relation_scores, relation_scores

GOLD = ["A", "A", "B", "no_relation", "no_relation", "B", "C"]
PRED = ["A", "B", "B", "A", "no_relation", "no_relation", "C"]

# relation_scores' output before RE called the shared scorer (keys in this order, these values)
EXPECTED_RE = {
    "micro_precision": 0.6, "micro_recall": 0.6, "micro_f1": 0.6,
    "macro_f1": 0.6666666666666666, "accuracy": 0.5714285714285714,
    "negative_label": "no_relation", "labels": ["A", "B", "C", "no_relation"],
    "per_label": {"A": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2},
                  "B": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2},
                  "C": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1},
                  "no_relation": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}},
    "confusion": [[1, 1, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0], [1, 0, 0, 1]],
    "support": 7,
}


def test_relation_scores_keys_and_values_are_unchanged():
    got = _relation_scores(GOLD, PRED, "no_relation", ["A", "B", "C", "no_relation"])
    assert got == EXPECTED_RE
    assert list(got) == list(EXPECTED_RE)  # results.json keeps its key order
    full = relation_scores(GOLD, PRED, "no_relation", ["A", "B", "C", "no_relation"])
    assert {k: full[k] for k in EXPECTED_RE} == EXPECTED_RE
    assert full["baseline"]["majority_label"] in ("A", "B", "no_relation")
    assert full["majority_share"] == pytest.approx(2 / 7)


def test_without_a_negative_label_re_and_cls_agree():
    re_scores = _relation_scores(GOLD, PRED, None)
    cls_scores = label_scores(GOLD, PRED)
    for key in ("micro_f1", "macro_f1", "accuracy", "labels", "per_label", "confusion",
                "support"):
        assert re_scores[key] == cls_scores[key]
    assert cls_scores["micro_f1"] == pytest.approx(4 / 7)  # = accuracy, single-label
    assert "micro_precision" not in cls_scores and "negative_label" not in cls_scores


def test_label_table_leaves_the_negative_label_out_of_the_averages():
    t = label_table(["a", "n", "b", "n"], ["a", "a", "n", "n"], negative_label="n")
    # predicted a, a (2 positive predictions, 1 right); gold a, b (2 positive pairs, 1 found)
    assert t["micro_precision"] == pytest.approx(0.5) and t["micro_recall"] == pytest.approx(0.5)
    assert t["macro_f1"] == pytest.approx((2 / 3 + 0.0) / 2)  # a: P 1/2 R 1, b: 0
    assert t["accuracy"] == pytest.approx(0.5)
    assert t["per_label"]["n"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    only_negative = label_table(["n", "n"], ["n", "n"], negative_label="n")
    assert only_negative["micro_f1"] == 0.0 and only_negative["accuracy"] == 1.0
    assert only_negative["confusion"] == [[2]]
