import pytest
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2

from bertkit.metrics.ner import entity_scores

GOLD = [["B-C", "I-C", "O", "B-D"], ["O", "B-D", "I-D", "O"]]


def test_perfect_prediction_scores_one():
    s = entity_scores(GOLD, GOLD)
    assert s["f1"] == s["conlleval_f1"] == s["macro_f1"] == 1.0
    assert s["per_type"]["D"]["support"] == 2


def test_equals_seqeval_both_modes():
    pred = [["I-C", "I-C", "O", "B-D"], ["O", "B-D", "O", "O"]]
    s = entity_scores(GOLD, pred)
    assert s["f1"] == pytest.approx(f1_score(GOLD, pred, mode="strict", scheme=IOB2))
    assert s["conlleval_f1"] == pytest.approx(f1_score(GOLD, pred))
    # hand count, strict: only B-D of sentence 1 is right: P = 1/2, R = 1/3
    assert s["precision"] == pytest.approx(0.5) and s["recall"] == pytest.approx(1 / 3)
    # default mode also accepts the I-C I-C span: P = 2/3... 2 correct of 3 predicted
    assert s["conlleval_precision"] == pytest.approx(2 / 3)


def test_length_mismatch_raises():
    with pytest.raises(ValueError):
        entity_scores(GOLD, [["O"], ["O"]])


def test_token_macro_f1_on_io_tags_by_hand():
    from bertkit.metrics.ner import entity_scores, token_scores

    gold = [["I-PAR", "I-PAR", "O", "I-INT"], ["I-OUT", "O"]]
    pred = [["B-PAR", "O", "O", "B-INT"], ["B-PAR", "O"]]
    t = token_scores(gold, pred)
    # PAR: tp 1, fp 1, fn 1 -> 0.5; INT: 1.0; OUT: tp 0 fn 1 -> 0
    assert t["token_per_type"]["PAR"]["f1"] == pytest.approx(0.5)
    assert t["token_macro_f1"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert t["token_micro_f1"] == pytest.approx(2 * 2 / (3 + 4))  # 3 predicted, 4 gold
    # the same figures come with the span scores (IOB2 gold from an IO file)
    iob2 = [["B-PAR", "I-PAR", "O", "B-INT"], ["B-OUT", "O"]]
    e = entity_scores(iob2, pred)
    assert e["token_macro_f1"] == pytest.approx(t["token_macro_f1"])
    assert e["f1"] == pytest.approx(2 * 1 / (3 + 3))  # spans: only INT exact
