"""BLURB's HoC metric against a transcription of BLURB's code (LinkBERT utils_hoc.py)."""

import numpy as np
import pytest

from bertkit.metrics.cls import _multilabel_scores, hoc_f1

LABELS = [f"h{k}" for k in range(10)]


def blurb_reference(true_list, pred_list, id_list):
    """michiyasunaga/LinkBERT src/seqcls/utils_hoc.py eval_hoc + compute_p_r_f, on 0/1 rows."""
    data = {}
    for t, p, i in zip(true_list, pred_list, id_list):
        key = i.split("_")[0]
        data.setdefault(key, (set(), set()))
        for j in range(len(LABELS)):
            if t[j] == 1:
                data[key][0].add(j)
            if p[j] == 1:
                data[key][1].add(j)
    y_test = np.array([[int(j in t) for j in range(10)] for t, _ in data.values()])
    y_pred = np.array([[int(j in p) for j in range(10)] for _, p in data.values()])
    tp = ((y_pred == y_test) & (y_pred != 0)).sum()
    P = tp / y_pred.sum() if y_pred.sum() else 0.0
    R = tp / y_test.sum() if y_test.sum() else 0.0
    return P, R, (2 * P * R / (P + R) if P + R else 0.0)


@pytest.mark.parametrize("seed", range(5))
def test_hoc_f1_is_blurbs_on_sentence_rows(seed):
    rng = np.random.default_rng(seed)
    n = 60
    gold = (rng.random((n, 10)) < 0.15).astype(int)
    pred = np.where(rng.random((n, 10)) < 0.8, gold, 1 - gold)
    ids = [f"{rng.integers(0, 15)}_{k}" for k in range(n)]
    sets = lambda m: [[LABELS[j] for j in np.flatnonzero(r)] for r in m]  # noqa: E731
    got = hoc_f1(sets(gold), sets(pred), ids, LABELS)
    P, R, F = blurb_reference(gold, pred, ids)
    assert (got["hoc_precision"], got["hoc_recall"], got["hoc_f1"]) == pytest.approx((P, R, F))
    assert got["hoc_documents"] == len({i.split("_")[0] for i in ids}) < n


def test_one_row_per_document_equals_micro_f1_and_not_blue_example_average():
    gold = [["h1"], [], ["h1", "h2"], ["h3"]]
    pred = [["h1", "h2"], ["h2"], ["h1"], ["h3"]]
    got = hoc_f1(gold, pred, ["1", "2", "3", "4"])
    assert got["hoc_f1"] == pytest.approx(_multilabel_scores(gold, pred)["micro_f1"])
    assert got["hoc_f1"] == pytest.approx(2 * 3 / (2 * 3 + 2 + 1))  # 2TP / (2TP + FP + FN)
