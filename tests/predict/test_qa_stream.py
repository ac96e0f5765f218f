"""``predict qa`` streams JSON lines: the same answers as the whole-file path, shards merge to the
unsharded output, a killed and resumed run gives the same bytes, bad lines; SQuAD JSON is read
whole (the streaming options refused)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.predict import StreamOptions, shard_output, stream_predict
from bertkit.predict.merge import merge_shards
from bertkit.tasks.qa.task import TASK, predict_qa

from tests.predict.conftest import crash_after

from tests.tasks.qa.conftest import CONTEXT, squad_doc, write_qa_dir

runner = CliRunner()


@pytest.fixture(scope="module")
def qa_model(tmp_path_factory, tiny_encoder):
    root = tmp_path_factory.mktemp("qa-stream")
    data = write_qa_dir(root / "data")
    res = runner.invoke(app, ["finetune", "qa", "--data", str(data), "--model", tiny_encoder,
                              "-o", str(root / "run"), "--device", "cpu", "--epochs", "1",
                              "--batch-size", "4", "--max-length", "32", "--doc-stride", "8",
                              "--max-question-length", "8"])
    assert res.exit_code == 0, res.output
    return str(root / "run"), data


def _questions(path, n, bad_at=None):
    qas = squad_doc()["data"][0]["paragraphs"][0]["qas"]
    lines = [json.dumps({"id": f"q{i}", "question": qas[i % 4]["question"], "context": CONTEXT})
             if i % 9 != 8 else "" for i in range(n)]
    if bad_at:
        lines[bad_at - 1] = '{"id": "x", "question": "Why?"}'  # no context
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pred(model, inp):
    return TASK.stream(model, str(inp), device="cpu", batch_size=4)


def test_qa_stream_matches_whole_file_shards_and_resume(tmp_path, qa_model):
    model, _ = qa_model
    inp = _questions(tmp_path / "in.jsonl", 30)
    whole = tmp_path / "whole.jsonl"
    stream_predict(_pred(model, inp), str(inp), whole, StreamOptions(chunk_size=4))
    assert whole.read_text() == predict_qa(model, str(inp), device="cpu", batch_size=4)
    assert len(whole.read_text().splitlines()) == 30 - 3  # blank lines give none, as ever
    out = tmp_path / "out.jsonl"
    for i in (1, 2, 3):
        stream_predict(_pred(model, inp), str(inp), shard_output(out, (i, 3)),
                       StreamOptions(chunk_size=4, shard=(i, 3)))
    assert merge_shards(out)["chunks"] == 8 and out.read_bytes() == whole.read_bytes()
    resumed, pred = tmp_path / "resumed.jsonl", _pred(model, inp)
    crash_after(pred, 2)
    with pytest.raises(BertkitError, match="stopped"):
        stream_predict(pred, str(inp), resumed, StreamOptions(chunk_size=4))
    stream_predict(_pred(model, inp), str(inp), resumed, StreamOptions(chunk_size=4, resume=True))
    assert resumed.read_bytes() == whole.read_bytes()


def test_qa_stream_bad_lines_and_squad_json(tmp_path, qa_model):
    model, data = qa_model
    inp = _questions(tmp_path / "in.jsonl", 12, bad_at=6)
    res = runner.invoke(app, ["predict", "qa", "-m", model, "-i", str(inp), "-o",
                              str(tmp_path / "a.jsonl"), "--device", "cpu"])
    said = " ".join(res.output.split())
    assert res.exit_code == 1 and "in.jsonl:6: question 'x': no 'context'" in said
    res = runner.invoke(app, ["predict", "qa", "-m", model, "-i", str(inp), "-o",
                              str(tmp_path / "b.jsonl"), "--device", "cpu", "--skip-bad-lines"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert len(rows) == 11 and rows[5]["line"] == 6 and \
        rows[5]["skipped"].startswith("question 'x': no 'context'")
    assert [r["id"] for r in rows if "id" in r] == [f"q{i}" for i in range(12) if i not in (5, 8)]
    assert TASK.stream(model, str(data / "test.json"), device="cpu") is None  # read whole
    res = runner.invoke(app, ["predict", "qa", "-m", model, "-i", str(data / "test.json"),
                              "--device", "cpu"])
    assert res.exit_code == 0 and [json.loads(x)["id"] for x in res.stdout.splitlines()
                                   if x.startswith("{")] == ["q1", "q2", "q3", "q4"]
    res = runner.invoke(app, ["predict", "qa", "-m", model, "-i", str(data / "test.json"),
                              "-o", str(tmp_path / "c.jsonl"), "--resume"])
    assert res.exit_code == 1 and "read whole" in " ".join(res.output.split())
