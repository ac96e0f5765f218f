"""End to end on real BC5CDR with the packaged MiniLM encoder (needs BERTKIT_DATA)."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app


@pytest.mark.integration
def test_finetune_ner_bc5cdr_small_budget_reaches_nontrivial_f1(tmp_path):
    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "finetune", "ner", "--data", "bc5cdr", "--max-train-samples", "300",
        "--max-eval-samples", "200", "--epochs", "2", "--lr", "1e-4", "--batch-size", "16",
        "--device", "cpu", "-o", str(run)])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    assert results["test"]["f1"] > 0.25  # an untrained tagger scores ~0
    assert set(results["test"]["per_type"]) == {"Chemical", "Disease"}
    conll = (run / "test_predictions.conll").read_text().strip().split("\n\n")
    assert len(conll) == 200
