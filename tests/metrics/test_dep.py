"""UAS/LAS, punctuation rules, per-relation scores, complete match, non-projective share."""

import numpy as np
import pytest

from bertkit.metrics.dep import attachment_scores, is_punct_form, punct_rule

WORDS = [["The", "cat", "sat", "."], ["Dogs", "bark", "!"]]
GOLD_H = [np.array([2, 3, 0, 3]), np.array([2, 0, 2])]
GOLD_R = [["det", "nsubj", "root", "punct"], ["nsubj", "root", "punct"]]


def test_known_case_with_and_without_punctuation():
    pred_h = [np.array([2, 3, 0, 2]), np.array([2, 0, 1])]       # both punct heads wrong
    pred_r = [["det", "obj", "root", "punct"], ["nsubj", "root", "punct"]]
    m = attachment_scores(GOLD_H, GOLD_R, pred_h, pred_r, WORDS, [["_"] * 4, ["_"] * 3])
    assert m["punct_rule"] == "form"
    assert m["scored_words"] == 5 and m["words"] == 7
    assert m["uas"] == pytest.approx(5 / 5) and m["las"] == pytest.approx(4 / 5)
    assert m["uas_punct"] == pytest.approx(5 / 7) and m["las_punct"] == pytest.approx(4 / 7)
    assert m["ucm"] == pytest.approx(1.0) and m["lcm"] == pytest.approx(0.5)
    assert m["per_rel"]["nsubj"] == {"las": 0.5, "precision": 1.0, "f1": pytest.approx(2 / 3),
                                     "support": 2}
    assert m["per_rel"]["punct"]["support"] == 0
    # both predicted trees attach punctuation across the root arc: non-projective
    assert m["nonprojective"] == 1.0 and m["gold_nonprojective"] == 0.0


def test_upos_rule_used_when_tags_are_ud():
    upos = [["DET", "NOUN", "VERB", "PUNCT"], ["NOUN", "VERB", "SYM"]]
    assert punct_rule(upos) == "upos"
    assert punct_rule([["NN", "."], ["_"]]) == "form"   # PTB tags in the UPOS column: by form
    words = [["The", "cat", "sat", "x"], ["Dogs", "bark", "!"]]  # 'x' is PUNCT by tag only
    m = attachment_scores(GOLD_H, GOLD_R, GOLD_H, GOLD_R, words, upos)
    assert m["punct_rule"] == "upos" and m["scored_words"] == 5 and m["las"] == 1.0


def test_nonprojective_share_and_punct_forms():
    gold = [np.array([0, 4, 1, 1]), np.array([2, 0])]
    m = attachment_scores(gold, [["r", "a", "b", "c"], ["a", "r"]], gold,
                          [["r", "a", "b", "c"], ["a", "r"]], [list("abcd"), list("ab")],
                          [["_"] * 4, ["_"] * 2])
    assert m["nonprojective"] == 0.5 and m["gold_nonprojective"] == 0.5
    assert is_punct_form("-LRB-") is False and is_punct_form("(") and is_punct_form("...")
    assert not is_punct_form("a.") and not is_punct_form("")
