"""``bertkit predict ner`` streaming options and ``bertkit predict merge`` through the CLI."""

from __future__ import annotations

import json

import pytest

from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.predict.state import part_path, state_path

from tests.predict.conftest import text_input

runner = CliRunner()


def _predict(model, inp, *args):
    return runner.invoke(app, ["predict", "ner", "-m", model, "-i", str(inp), "--device", "cpu",
                               "-b", "4", *map(str, args)])


def test_resume_shard_merge_and_skip_through_the_cli(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 30, bad_at=17)
    whole = tmp_path / "whole.jsonl"
    res = _predict(ner_model, inp, "-o", whole, "-f", "jsonl", "--chunk-size", "4")
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and f"{inp}:17: not valid UTF-8" in text and "--resume" in text
    assert not whole.exists() and len(part_path(whole).read_text().splitlines()) == 16
    res = _predict(ner_model, inp, "-o", whole, "-f", "jsonl", "--chunk-size", "4", "--resume",
                   "--skip-bad-lines")
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "skipped 1 unreadable line" in said and "predict: 14 sentences" in said
    assert "(resumed: 14 this run, 30 in all)" in said  # the rate is of this run's records
    rows = [json.loads(x) for x in whole.read_text().splitlines()]
    assert len(rows) == 30 and rows[16]["skipped"].startswith("not valid UTF-8")
    out = tmp_path / "out.jsonl"
    for i in (1, 2):
        res = _predict(ner_model, inp, "-o", out, "-f", "jsonl", "--chunk-size", "4",
                       "--skip-bad-lines", "--shard", f"{i}/2")
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["predict", "merge", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == whole.read_bytes() and "merged 2 shards" in res.output


def test_streaming_option_errors(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 5)
    for args, message in ((("--shard", "3/2", "-o", tmp_path / "o"), "--shard '3/2' is not I/N"),
                          (("--jobs", "2"), "--jobs needs --output"),
                          (("--resume",), "--resume needs --output"),
                          (("--resume", "-o", tmp_path / "o"), "nothing to resume"),
                          (("--jobs", "2", "--shard", "1/2", "-o", tmp_path / "o"),
                           "--shard and --jobs together")):
        res = _predict(ner_model, inp, *args)
        text = " ".join(res.output.split())
        assert res.exit_code == 1 and message in text and "Traceback" not in text, text
    res = runner.invoke(app, ["predict", "merge", str(tmp_path / "o")])
    assert res.exit_code == 1 and "no shard outputs found" in res.output


@pytest.mark.slow
def test_jobs_two_processes_give_the_single_process_file(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 40)
    one, two = tmp_path / "one.conll", tmp_path / "two.conll"
    assert _predict(ner_model, inp, "-o", one, "--chunk-size", "5").exit_code == 0
    res = _predict(ner_model, inp, "-o", two, "--chunk-size", "5", "--jobs", "2")
    assert res.exit_code == 0, res.output
    assert two.read_bytes() == one.read_bytes() and "merged 2 shards" in res.output
    assert not state_path(two).exists() and sorted(p.name for p in tmp_path.iterdir()) == \
        ["in.txt", "one.conll", "two.conll"]


def test_streaming_options_are_checked_before_the_model_is_loaded(tmp_path):
    """Helper trial: a bad ``--shard`` was reported only after the model had loaded (seconds).
    With a model folder that does not exist, the option's error still comes first."""
    inp = text_input(tmp_path / "in.txt", 5)
    missing = tmp_path / "no-model"
    for args, message in ((("--shard", "3/2", "-o", tmp_path / "o"), "--shard '3/2' is not I/N"),
                          (("--jobs", "2"), "--jobs needs --output"),
                          (("--jobs", "2", "--shard", "1/2", "-o", tmp_path / "o"),
                           "--shard and --jobs together")):
        res = runner.invoke(app, ["predict", "ner", "-m", str(missing), "-i", str(inp),
                                  *map(str, args)])
        text = " ".join(res.output.split())
        assert res.exit_code == 1 and message in text and "no-model" not in text, text
