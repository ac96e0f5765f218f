"""The one reader of a saved model's settings (:mod:`bertkit.tasks.saved_settings`): a missing
key reads its one default, a bad value is refused naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertkit.errors import BertkitError
from bertkit.tasks.saved_settings import DEFAULT_MAX_LENGTH, MAX_LENGTH, saved_settings


@pytest.mark.parametrize("task, length", [("ner", 512), ("re", 512), ("dep", 512), ("cls", 512),
                                          ("qa", 384), ("coref", 384), ("sim", 256)])
def test_a_missing_max_length_reads_the_tasks_one_default(task, length):
    s = saved_settings({"task": task, "path": "run/model"})
    assert s.max_length == length == MAX_LENGTH.get(task, DEFAULT_MAX_LENGTH)
    assert s.file == Path("run/model/bertkit.json") and s.task == task


def test_missing_keys_read_their_defaults_and_given_ones_are_kept():
    s = saved_settings({"task": "qa", "path": "m"})
    assert (s.doc_stride, s.max_question_length, s.n_best, s.max_answer_length,
            s.null_threshold, s.unanswerable) == (128, 64, 20, 30, 0.0, False)
    s = saved_settings({"task": "qa", "path": "m", "max_length": 256, "doc_stride": 64,
                        "null_threshold": -1, "unanswerable": True, "decoder": None})
    assert (s.max_length, s.doc_stride, s.null_threshold, s.unanswerable, s.decoder) == \
        (256, 64, -1.0, True, "mst")  # null: the default, as a key saved before it existed
    assert isinstance(s.null_threshold, float)
    # the task named by the caller wins over the meta's (a zero-shot meta has none)
    assert saved_settings({"path": "m"}, "sim").max_length == 256
    assert saved_settings({"task": "dep", "path": "m", "word_repr": "mean"}).word_repr == "mean"


@pytest.mark.parametrize("key, value, expected", [
    ("max_length", "long", "a whole number"), ("max_length", 0, "a whole number"),
    ("max_length", 12.5, "a whole number"), ("max_length", True, "a whole number"),
    ("doc_stride", -3, "a whole number"), ("null_threshold", "high", "a number"),
    ("null_threshold", float("nan"), "a number"), ("unanswerable", "yes", "true or false"),
    ("decoder", 3, "a string"), ("multi_label", 1, "true or false")])
def test_a_bad_value_is_refused_naming_the_file_and_the_key(key, value, expected):
    with pytest.raises(BertkitError) as err:
        saved_settings({"task": "qa", "path": "runs/qa/model", key: value})
    assert err.value.file == str(Path("runs/qa/model/bertkit.json"))
    assert f"'{key}' is {value!r}" in err.value.message
    assert expected in err.value.expected and f"'{key}'" in err.value.expected


def test_fitted_length_stays_within_the_encoders_positions():
    from types import SimpleNamespace

    config = SimpleNamespace(max_position_embeddings=128, model_type="bert")
    assert saved_settings({"task": "ner", "max_length": 64}).fitted_length(config) == 64
    assert saved_settings({"task": "ner"}).fitted_length(config) == 128
