"""SQuAD v1.1 and COVID-QA end to end on small slices with the packaged MiniLM (needs
BERTKIT_DATA); SQuAD 2.0 switches its mode on by itself."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app


@pytest.mark.integration
@pytest.mark.parametrize("name,v2", [("squad", False), ("covid-qa", False), ("squad-v2", True)])
def test_finetune_qa_registered_sets(tmp_path, name, v2):
    run = tmp_path / name
    res = CliRunner().invoke(app, [
        "finetune", "qa", "--data", name, "--max-train-samples", "16", "--max-eval-samples", "8",
        "--epochs", "1", "--lr", "1e-4", "--batch-size", "16", "--max-length", "256",
        "--doc-stride", "64", "--device", "cpu", "-o", str(run)]
        + (["--null-window-rate", "0.1"] if name == "covid-qa" else []))
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    test = results["test"]
    assert results["unanswerable"] is v2 and test["total"] == 8 and test["missing"] == 0
    assert 0.0 <= test["exact"] <= test["f1"] <= 100.0
    windows = results["windows"]
    if name == "covid-qa":  # whole papers: many windows per question, 1 in 10 null ones trained
        assert windows["train"] > 10 * 16 and windows["train_null_answerable"] > 9 * 16
        answer_windows = windows["train"] - windows["train_null_answerable"]
        assert answer_windows >= 16 - 1  # one window at least holds each answer (or all cut)
        trained = windows["sampled_per_epoch"][0]
        assert answer_windows < trained < answer_windows + 0.2 * windows["train_null_answerable"]
    else:
        assert windows["sampled_per_epoch"] == [windows["train"]]
    if v2:
        assert "SQuAD 2.0 mode on" in " ".join(res.output.split())
        assert "best_f1_thresh" in test and "NoAns_total" in test
    src = {"squad": "squad", "covid-qa": "covid-qa", "squad-v2": "squad-v2"}[name]
    contexts = {}
    import os
    from pathlib import Path

    doc = json.loads((Path(os.environ["BERTKIT_DATA"]) / "qa" / src / "test.json").read_text())
    for article in doc["data"]:
        for p in article["paragraphs"]:
            for q in p["qas"]:
                contexts[q["id"]] = p["context"]
    for line in (run / "test_predictions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["answer"]:
            assert contexts[rec["id"]][rec["start"]:rec["end"]] == rec["answer"]
