import numpy as np
import pytest

from bertkit.metrics.re import detect_negative, relation_scores, save_confusion

GOLD = ["A", "A", "B", "no_relation", "no_relation", "B", "C"]
PRED = ["A", "B", "B", "A", "no_relation", "no_relation", "C"]


def test_micro_f1_excluding_negative_matches_hand_computation():
    m = relation_scores(GOLD, PRED, "no_relation", ["A", "B", "C", "no_relation"])
    # positive predictions: A, B, B, A, C (5); correct among them: A, B, C (3)
    # positive gold pairs: A, A, B, B, C (5); found: 3
    assert m["micro_precision"] == pytest.approx(3 / 5)
    assert m["micro_recall"] == pytest.approx(3 / 5)
    assert m["micro_f1"] == pytest.approx(3 / 5)
    assert m["accuracy"] == pytest.approx(4 / 7)
    f_a = 2 * (1 / 2) * (1 / 2) / (1 / 2 + 1 / 2)  # A: P 1/2, R 1/2
    f_b = 2 * (1 / 2) * (1 / 2) / 1  # B: P 1/2, R 1/2
    assert m["macro_f1"] == pytest.approx((f_a + f_b + 1.0) / 3)
    assert m["per_label"]["no_relation"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    assert m["labels"] == ["A", "B", "C", "no_relation"]
    assert m["confusion"][0] == [1, 1, 0, 0] and m["confusion"][3] == [1, 0, 0, 1]


def test_without_negative_micro_f1_is_accuracy():
    m = relation_scores(GOLD, PRED, None)
    assert m["micro_f1"] == pytest.approx(m["accuracy"]) == pytest.approx(4 / 7)


def test_label_only_in_gold_is_reported_not_a_crash():
    m = relation_scores(["A", "Z"], ["A", "A"], None, ["A", "B"])
    assert m["per_label"]["Z"]["recall"] == 0 and m["per_label"]["Z"]["support"] == 1
    assert m["per_label"]["B"]["support"] == 0 and "B" in m["labels"]
    # macro over labels present in gold or predictions (A, Z), not the absent B
    assert m["macro_f1"] == pytest.approx((2 * 0.5 * 1 / 1.5 + 0) / 2)
    assert relation_scores([], [], None)["micro_f1"] == 0.0


def test_detect_negative():
    assert detect_negative(["INHIBITOR", "false"]) == "false"
    assert detect_negative(["per:title", "no_relation"]) == "no_relation"
    assert detect_negative(["INHIBITOR", "AGONIST"]) is None


def test_confusion_files(tmp_path):
    m = relation_scores(GOLD, PRED, "no_relation")
    csv_path, png = save_confusion(tmp_path / "cm", m["labels"], m["confusion"], "t")
    rows = csv_path.read_text().splitlines()
    assert rows[0] == "gold\\predicted,A,B,C,no_relation" and rows[4] == "no_relation,1,0,0,1"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.asarray(m["confusion"]).sum() == len(GOLD)
