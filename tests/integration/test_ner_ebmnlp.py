"""EBM-NLP PICO end to end on a small slice with the packaged MiniLM (needs BERTKIT_DATA)."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app


@pytest.mark.integration
def test_finetune_ner_ebmnlp_token_macro(tmp_path):
    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "finetune", "ner", "--data", "ebmnlp", "--metric", "token-macro",
        "--max-train-samples", "200", "--max-eval-samples", "60", "--epochs", "1",
        "--lr", "5e-4", "--batch-size", "8", "--device", "cpu", "-o", str(run)])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    assert results["schemes"]["train"] == "IOB1"  # IO tags read as IOB1 runs -> IOB2
    assert results["metric"] == "token-macro" and results["select_metric"] == "token_macro_f1"
    test = results["test"]
    assert set(test["token_per_type"]) == {"INT", "OUT", "PAR"}
    per_type = [row["f1"] for row in test["token_per_type"].values()]
    assert test["token_macro_f1"] == pytest.approx(sum(per_type) / 3)  # the mean over P, I, O
    assert all(row["support"] > 0 for row in test["token_per_type"].values())
    assert "f1" in test and "per_type" in test  # span F1 beside it
    assert "token_macro_f1" in results["dev"]
    assert "token macro" in res.output
