"""Span decoding: context pieces only, window edges, pooling over windows, null scores."""

import numpy as np
import pytest

from bertkit.tasks.qa.decode import best_spans, decode
from bertkit.tasks.qa.encoding import Features


def _features(n_windows, example, T=8, ctx=(3, 6), offsets=None):
    offs = offsets if offsets is not None else \
        [np.array([[0, 0]] * 3 + [[0, 3], [4, 7], [8, 11], [12, 15]] + [[0, 0]])] * n_windows
    return Features([np.zeros(T, dtype=np.int64)] * n_windows, None, offs,
                    np.asarray(example), np.full(n_windows, ctx[0]), np.full(n_windows, ctx[1]),
                    np.zeros(n_windows, dtype=np.int64), np.zeros(n_windows, dtype=np.int64))


def test_spans_never_cross_into_the_question():
    s = np.zeros((1, 8)); e = np.zeros((1, 8))
    s[0, 1], e[0, 1] = 50.0, 50.0  # the question piece has the highest logits
    s[0, 4], e[0, 5] = 2.0, 3.0
    start, end, score = best_spans(s, e, np.array([3]), np.array([6]))
    assert (start[0], end[0], score[0]) == (4, 5, 5.0)


def test_answer_at_first_and_last_context_piece():
    s = np.full((2, 8), -5.0); e = np.full((2, 8), -5.0)
    s[0, 3], e[0, 3] = 4.0, 4.0  # first context piece alone
    s[1, 6], e[1, 6] = 4.0, 4.0  # last context piece alone
    start, end, _ = best_spans(s, e, np.array([3, 3]), np.array([6, 6]))
    assert start.tolist() == [3, 6] and end.tolist() == [3, 6]


def test_end_before_start_and_too_long_spans_refused():
    s = np.full((1, 8), -5.0); e = np.full((1, 8), -5.0)
    s[0, 6], e[0, 3] = 9.0, 9.0  # best start after best end
    s[0, 4], e[0, 5] = 1.0, 1.0
    start, end, score = best_spans(s, e, np.array([3]), np.array([6]), max_answer_length=30)
    assert (start[0], end[0]) != (6, 3) and end[0] >= start[0]
    s = np.full((1, 8), -5.0); e = np.full((1, 8), -5.0)
    s[0, 3], e[0, 6] = 9.0, 9.0  # 4 pieces
    start, end, _ = best_spans(s, e, np.array([3]), np.array([6]), max_answer_length=2)
    assert end[0] - start[0] + 1 <= 2


def test_best_span_pooled_over_windows_and_null_score_is_the_minimum():
    contexts = ["abc def ghi jkl"]
    s = np.full((2, 8), -5.0); e = np.full((2, 8), -5.0)
    s[0, 3], e[0, 3] = 1.0, 1.0          # window 0: "abc", 2.0
    s[1, 5], e[1, 6] = 3.0, 3.0          # window 1: "ghi jkl", 6.0
    s[0, 0], e[0, 0] = 4.0, 4.0          # [CLS] 8.0 in window 0
    s[1, 0], e[1, 0] = 1.0, 0.5          # [CLS] 1.5 in window 1: the minimum
    answers = decode(s, e, _features(2, [0, 0]), contexts)
    assert answers.text == ["ghi jkl"] and answers.start.tolist() == [8]
    assert answers.end.tolist() == [15] and answers.span_score[0] == pytest.approx(6.0)
    assert answers.null_score[0] == pytest.approx(1.5)
    assert answers.null_diff[0] == pytest.approx(-4.5)
    assert answers.final(0.0) == ["ghi jkl"] and answers.final(-5.0) == [""]


def test_questions_kept_apart_and_text_cut_from_the_original_context():
    contexts = ["ABC def GHI jkl", "mno PQR stu vwx"]
    s = np.full((3, 8), -5.0); e = np.full((3, 8), -5.0)
    s[0, 3], e[0, 4] = 1.0, 1.0  # q0: "ABC def"
    s[1, 6], e[1, 6] = 9.0, 9.0  # q1 window 1: "vwx" (9+9) beats window 2
    s[2, 4], e[2, 4] = 2.0, 2.0  # q1 window 2: "PQR"
    answers = decode(s, e, _features(3, [0, 1, 1]), contexts)
    assert answers.text == ["ABC def", "vwx"]
