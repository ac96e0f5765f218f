import json

import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.tasks.re import REConfig, finetune_re, predict_re
from tests.tasks.re.conftest import PAIRS, write_re_dir

runner = CliRunner()


def run(tmp_path, name, data, model, **kw):
    kw = {"epochs": 2, "batch_size": 2, "lr": 1e-3, "device": "cpu", "logging_steps": 1, **kw}
    cfg = REConfig(data=str(data), model=model, output_dir=str(tmp_path / name), **kw)
    return finetune_re(cfg)


def test_run_directory_determinism_and_unseen_label(tmp_path, tiny_encoder):
    test = PAIRS + [("<< x >> binds [[ y ]] .", "AGONIST")]
    d = write_re_dir(tmp_path / "d", test=test)
    a = run(tmp_path, "a", d, tiny_encoder, seed=3, epochs=1, pooling="entity-start")
    b = run(tmp_path, "b", d, tiny_encoder, seed=3, epochs=1, pooling="entity-start")
    untimed = lambda rec: {k: v for k, v in rec.items() if k != "train_seconds"}  # wall clock
    assert a["test"] == b["test"] and untimed(a["dev"]) == untimed(b["dev"])
    assert a["dev"]["train_tokens"] == b["dev"]["train_tokens"] > 0
    wa = load_file(str(tmp_path / "a" / "model" / "model.safetensors"))
    wb = load_file(str(tmp_path / "b" / "model" / "model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    run_dir = tmp_path / "a"
    for f in ("config.yaml", "metrics.jsonl", "results.json", "test_predictions.jsonl",
              "test_confusion.csv", "test_confusion.png", "model/relation.py", "model/bertkit.json"):
        assert (run_dir / f).is_file(), f
    # the test-only label is reported with recall 0, not a crash
    assert a["test"]["per_label"]["AGONIST"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert a["negative_label"] is None and a["test"]["micro_f1"] == a["test"]["accuracy"]
    preds = [json.loads(l) for l in (run_dir / "test_predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 7 and preds[0]["label"] == "INHIBITOR" and "predicted" in preds[0]
    text = predict_re(str(run_dir), str(d / "dev.jsonl"))
    assert [json.loads(l)["predicted"] for l in text.splitlines()] == [p["predicted"] for p in preds[:6]]


def test_bad_line_stops_before_training_unless_skipped(tmp_path, tiny_encoder):
    d = write_re_dir(tmp_path / "d")
    with (d / "dev.jsonl").open("a") as f:
        f.write('{"text": "no markers here", "label": "INHIBITOR"}\n')
    res = runner.invoke(app, ["finetune", "re", "--data", str(d), "--model", tiny_encoder,
                              "-o", str(tmp_path / "run"), "--device", "cpu"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert f"{d / 'dev.jsonl'}:7: missing opening marker '<<'" in res.output.replace("\n", "")
    assert not (tmp_path / "run").exists()
    res = run(tmp_path, "ok", d, tiny_encoder, skip_bad_lines=True, epochs=1)
    assert res["skipped_bad_lines"] == {"train": 0, "dev": 1, "test": 0}


def test_cli_finetune_evaluate_predict(tmp_path, tiny_encoder, monkeypatch):
    d = write_re_dir(tmp_path / "d", train=PAIRS + [("<< a >> and [[ b ]] .", "no_relation")])
    run_dir = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "re", "--data", str(d), "--model", tiny_encoder,
                              "-o", str(run_dir), "--epochs", "1", "--batch-size", "4",
                              "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert "micro" in res.output and "(negative)" in res.output
    results = json.loads((run_dir / "results.json").read_text())
    assert results["negative_label"] == "no_relation" and results["pooling"] == "cls"
    out = tmp_path / "m.json"
    res = runner.invoke(app, ["evaluate", "re", "-m", str(run_dir), "--data", str(d), "--split",
                              "dev", "--output", str(out), "--confusion", str(tmp_path / "cm"),
                              "--predictions", str(tmp_path / "p.jsonl"), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["negative_label"] == "no_relation"
    assert (tmp_path / "cm.png").is_file() and (tmp_path / "cm.csv").is_file()
    src = tmp_path / "in.txt"
    src.write_text("<< aspirin >> inhibits [[ cox-1 ]]\nbroken line\n")
    res = runner.invoke(app, ["predict", "re", "-m", str(run_dir), "-i", str(src), "--device", "cpu"])
    assert res.exit_code == 1 and f"{src}:2: missing opening marker" in res.output.replace("\n", "")
    res = runner.invoke(app, ["predict", "re", "-m", str(run_dir), "-i", str(src),
                              "--skip-bad-lines", "-o", str(tmp_path / "o.jsonl"), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    row, skipped = [json.loads(l) for l in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert row["text"].startswith("<< aspirin") and row["line"] == 1 and 0 < row["probability"] <= 1
    assert skipped == {"line": 2, "skipped": skipped["skipped"]}  # streamed: the skip is recorded
    assert "missing opening marker" in skipped["skipped"]
    res = runner.invoke(app, ["evaluate", "re", "-m", str(tmp_path), "--data", str(d)])
    assert res.exit_code == 1 and "no saved bertkit relation-extraction model" in res.output


def test_span_form_with_typed_markers(tmp_path, tiny_encoder):
    d = tmp_path / "span"
    d.mkdir()
    rows = [{"tokens": ["aspirin", "inhibits", "cox", "."], "subject": {"start": 0, "end": 1, "type": "CHEM"},
             "object": {"start": 2, "end": 3, "type": "GENE"}, "label": "INHIBITOR"},
            {"token": ["egfr", "is", "activated", "by", "egf"], "subj_start": 4, "subj_end": 4,
             "subj_type": "CHEM", "obj_start": 0, "obj_end": 0, "obj_type": "GENE",
             "relation": "ACTIVATOR"}]
    for split in ("train", "dev", "test"):
        (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = run(tmp_path, "typed", d, tiny_encoder, typed_markers=True, epochs=1)
    meta = json.loads((tmp_path / "typed" / "model" / "bertkit.json").read_text())
    assert meta["entity_types"] == ["CHEM", "GENE"]
    added = json.loads((tmp_path / "typed" / "model" / "tokenizer.json").read_text())["added_tokens"]
    assert {"[E1:CHEM]", "[/E2:GENE]", "[E1]"} <= {t["content"] for t in added}
    preds = [json.loads(l)["predicted"] for l in predict_re(str(tmp_path / "typed"), str(d / "test.jsonl")).splitlines()]
    saved = [json.loads(l)["predicted"] for l in (tmp_path / "typed" / "test_predictions.jsonl").read_text().splitlines()]
    assert preds == saved and res["test"]["support"] == 2
