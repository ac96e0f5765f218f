"""One prediction path per task: the whole-file ``predict_<task>`` function is the streaming
predictor over one file, so it gives the bytes ``bertkit predict <task> -o OUT`` streams (in
chunks, resumable), and a saved model's bad setting is refused by both, naming file and key."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.tasks.cls.task import predict_cls
from bertkit.tasks.ner.task import predict_ner

from tests.predict.conftest import WORDS, text_input

runner = CliRunner()


def _stream(task, model, inp, out, *args):
    res = runner.invoke(app, ["predict", task, "-m", str(model), "-i", str(inp), "-o", str(out),
                              "--device", "cpu", "--chunk-size", "3", *args])
    assert res.exit_code == 0, res.output
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["conll", "jsonl"])
def test_ner_whole_file_predict_is_the_streamed_output(tmp_path, ner_model, fmt):
    inp = text_input(tmp_path / "in.txt", 16)  # blank lines too: each has its record
    whole = predict_ner(ner_model, str(inp), str(tmp_path / "whole.out"), fmt=fmt, device="cpu",
                        batch_size=4)
    streamed = _stream("ner", ner_model, inp, tmp_path / "streamed.out", "--format", fmt)
    assert whole == streamed and (tmp_path / "whole.out").read_text(encoding="utf-8") == whole
    assert len(whole.splitlines()) >= 16  # every input line has its record or block
    assert ("\t" in whole) if fmt == "conll" else ('"tags": ["' in whole)  # words were tagged


def test_ner_whole_file_predict_of_conll_is_the_streamed_output(tmp_path, ner_model):
    inp = tmp_path / "in.conll"
    inp.write_text("\n\n".join("\n".join(f"{w}\tO" for w in WORDS[i % 4:i % 4 + 3 + i])
                               for i in range(7)) + "\n", encoding="utf-8")
    whole = predict_ner(ner_model, str(inp), device="cpu")
    assert whole == _stream("ner", ner_model, inp, tmp_path / "out.conll")
    assert whole.count("\n\n") == 6  # seven sentences, the gold column kept
    assert all(len(row.split("\t")) == 3 for row in whole.splitlines() if row)


def test_cls_whole_file_predict_is_the_streamed_output(tmp_path, cls_run):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "text": f"text {i} " + "word " * (i % 4)})
                           + "\n" for i in range(10)), encoding="utf-8")
    whole = predict_cls(str(cls_run), str(inp), device="cpu")
    assert whole == _stream("cls", cls_run, inp, tmp_path / "out.jsonl")
    rows = [json.loads(x) for x in whole.splitlines()]
    assert [r["id"] for r in rows] == list(range(10))
    assert all(r["predicted"] in ("a", "b") for r in rows)
    text = tmp_path / "in.txt"
    text.write_text("a first text\n\u200b\nthe third\n", encoding="utf-8")
    whole = predict_cls(str(cls_run), str(text), device="cpu")
    assert whole == _stream("cls", cls_run, text, tmp_path / "out2.jsonl")
    assert [json.loads(x).get("empty", False) for x in whole.splitlines()] == [False, True, False]


def test_cls_whole_file_predict_leaves_skipped_lines_out(tmp_path, cls_run):
    """Whole-file ``predict`` with ``skip_bad_lines`` writes no record for a bad line (as it
    always has); the streamed output has one saying it was skipped."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"text": "one"}\n{"text": \n{"text": "three"}\n', encoding="utf-8")
    whole = predict_cls(str(cls_run), str(inp), device="cpu", skip_bad_lines=True)
    streamed = _stream("cls", cls_run, inp, tmp_path / "out.jsonl", "--skip-bad-lines")
    rows = [json.loads(x) for x in streamed.splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3] and "skipped" in rows[1]
    assert whole.splitlines() == [streamed.splitlines()[0], streamed.splitlines()[2]]


def test_a_bad_saved_max_length_is_refused_naming_file_and_key(tmp_path, ner_model):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(ner_model, model)
    meta = json.loads((model / "bertkit.json").read_text(encoding="utf-8"))
    (model / "bertkit.json").write_text(json.dumps({**meta, "max_length": "long"}),
                                        encoding="utf-8")
    inp = text_input(tmp_path / "in.txt", 3)
    with pytest.raises(BertkitError, match=r"bertkit\.json: the saved setting 'max_length' is "
                                           r"'long'"):
        predict_ner(str(model), str(inp), device="cpu")
    res = runner.invoke(app, ["predict", "ner", "-m", str(model), "-i", str(inp), "--device",
                              "cpu"])
    assert res.exit_code == 1 and "'max_length'" in res.output and "Traceback" not in res.output
