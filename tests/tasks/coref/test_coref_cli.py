"""``bertkit finetune|evaluate|predict coref`` through the command line, bad input included."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from tests.tasks.coref.conftest import document, write_coref_dir

runner = CliRunner()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_encoder):
    root = tmp_path_factory.mktemp("coref-cli")
    data = write_coref_dir(root / "data")
    out = root / "run"
    res = runner.invoke(app, ["finetune", "coref", "--data", str(data), "--model", tiny_encoder,
                              "--epochs", "1", "--max-length", "12", "--device", "cpu",
                              "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_run_writes_scores_predictions_and_model(run_dir):
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    for key in ("conll_f1", "muc_f1", "bcub_f1", "ceafe_f1", "conll_f1_nosingletons"):
        assert 0.0 <= results["test"][key] <= 100.0
    test = results["test"]
    assert test["conll_f1"] == pytest.approx((test["muc_f1"] + test["bcub_f1"] + test["ceafe_f1"]) / 3)
    assert (run_dir / "model" / "coref.safetensors").is_file()
    text = (run_dir / "test_predictions.conll").read_text(encoding="utf-8")
    assert text.count("#begin document") == 2 and text.count("#end document") == 2


def test_predict_text_and_jsonl_give_character_offsets(run_dir, tmp_path):
    text = "Anna met her brother in Paris. She smiled and he waved."
    (tmp_path / "doc.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "doc.jsonl"
    res = runner.invoke(app, ["predict", "coref", "-m", str(run_dir), "-i",
                              str(tmp_path / "doc.txt"), "-o", str(out), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    (obj,) = [json.loads(l) for l in out.read_text(encoding="utf-8").splitlines()]
    assert obj["text"] == text
    for cluster in obj["clusters"]:
        for m in cluster:
            assert text[m["start"]:m["end"]] == m["text"] and m["text"].strip() == m["text"]
    lines = tmp_path / "docs.jsonl"
    lines.write_text(json.dumps({"id": "a", "text": text}) + "\n" +
                     json.dumps({"id": "b", "text": "Tom saw the dog. It barked."}) + "\n",
                     encoding="utf-8")
    res = runner.invoke(app, ["predict", "coref", "-m", str(run_dir), "-i", str(lines),
                              "--output-format", "conll", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert "#begin document (a); part 0" in res.output and "\tdog\t" in res.output


def test_evaluate_reproduces_the_run(run_dir):
    from bertkit.tasks.coref.task import evaluate_coref

    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    data = results["splits"]["test"].rsplit("/", 1)[0]
    ev = evaluate_coref(str(run_dir), data, "test", device="cpu")
    assert ev.metrics["conll_f1"] == pytest.approx(results["test"]["conll_f1"], abs=1e-9)


@pytest.mark.parametrize("edit, line, words", [
    (lambda t: t.replace("a\t0\t1\tmet\t_\t", "a\t0\t1\tmet\t_\t3)"), 3, "not open"),
    (lambda t: t.replace("a\t0\t3\tbrother\t_\t1)", "a\t0\t3\tbrother\t_\t"), 4,
     "never closed"),
    (lambda t: t.rsplit("#end document", 1)[0], 1, "no #end document"),
])
def test_bad_training_file_exits_1_naming_file_and_line(tmp_path, tiny_encoder, edit, line,
                                                         words):
    data = write_coref_dir(tmp_path / "data")
    path = data / "train.conll"
    path.write_text(edit(document("a")), encoding="utf-8")
    out = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "coref", "--data", str(data), "--model", tiny_encoder,
                              "--epochs", "1", "--device", "cpu", "-o", str(out)])
    assert res.exit_code == 1
    flat = " ".join(res.output.split())
    assert f"train.conll:{line}:" in flat and words in flat
    assert "Traceback" not in res.output and not (out / "results.json").exists()


def test_bad_predict_input_exits_1(run_dir, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "Fine."}\n{"id": "b"}\n', encoding="utf-8")
    res = runner.invoke(app, ["predict", "coref", "-m", str(run_dir), "-i", str(bad),
                              "--device", "cpu"])
    assert res.exit_code == 1 and "bad.jsonl:2:" in " ".join(res.output.split())
    keep = tmp_path / "keep.conll"
    keep.write_text("precious\n", encoding="utf-8")
    empty = tmp_path / "empty.conll"
    empty.write_text("#begin document (e); part 0\n#end document\n", encoding="utf-8")
    res = runner.invoke(app, ["predict", "coref", "-m", str(run_dir), "-i", str(empty),
                              "-o", str(keep), "--device", "cpu"])
    assert res.exit_code == 1 and "no tokens" in res.output
    assert keep.read_text(encoding="utf-8") == "precious\n"  # nothing already written lost


def test_a_conll_file_without_a_document_header_is_refused_not_read_as_text(run_dir, tmp_path):
    headless = tmp_path / "headless.conll"  # columns only: was tagged as one plain-text document
    headless.write_text("x\t0\t0\tHello\t-\nx\t0\t1\tworld\t-\n", encoding="utf-8")
    res = runner.invoke(app, ["predict", "coref", "-m", str(run_dir), "-i", str(headless),
                              "--device", "cpu"])
    out = " ".join(res.output.split())
    assert res.exit_code == 1 and "headless.conll:1:" in out and "outside a document" in out


def test_predict_streams_shards_merge_and_skips_a_bad_document(run_dir, tmp_path):
    docs = tmp_path / "docs.conll"
    docs.write_text(document("a") + document("b").replace("b\t0\t1\tmet\t_\t", "b\t0\t1\tmet"
                                                            "\t_\t3)") + document("c"),
                    encoding="utf-8")
    base = ["predict", "coref", "-m", str(run_dir), "-i", str(docs), "--device", "cpu",
            "--chunk-size", "1"]
    res = runner.invoke(app, base + ["-o", str(tmp_path / "bad.jsonl")])
    flat = " ".join(res.output.split())
    assert res.exit_code == 1
    assert "docs.conll:37: line 39: '3)' closes a mention of entity 3" in flat
    assert "the 1 records before it are written" in flat
    whole = tmp_path / "whole.jsonl"  # an .jsonl output: JSON lines
    res = runner.invoke(app, base + ["-o", str(whole), "--skip-bad-lines"])
    assert res.exit_code == 0, res.output
    assert "skipped 1 unreadable line of" in " ".join(res.output.split())
    rows = [json.loads(x) for x in whole.read_text(encoding="utf-8").splitlines()]
    assert [r.get("id") for r in rows] == ["a; part 0", None, "c; part 0"]
    assert rows[1]["line"] == 37 and "closes a mention of entity 3" in rows[1]["skipped"]
    out = tmp_path / "out.jsonl"
    for i in (1, 2):
        res = runner.invoke(app, base + ["-o", str(out), "--skip-bad-lines", "--shard", f"{i}/2"])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["predict", "merge", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == whole.read_bytes()


def test_predict_help_shows_a_chunk_of_16_documents():
    res = runner.invoke(app, ["predict", "coref", "--help"], terminal_width=200)
    flat = " ".join(res.output.split())
    assert "Documents per chunk" in flat and "[default: 16]" in flat and "--resume" in flat
