"""End to end on real GENIA (a few hundred sentences) with the packaged MiniLM encoder."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.conllu import read_conllu
from bertkit.decoding.mst import is_tree


@pytest.mark.integration
def test_finetune_dep_genia_small_budget_parses_well_formed_trees(tmp_path):
    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "finetune", "dep", "--data", "genia", "--max-train-samples", "200",
        "--max-eval-samples", "50", "--epochs", "2", "--lr", "2e-4", "--batch-size", "8",
        "--device", "cpu", "-o", str(run)])
    assert res.exit_code == 0, res.output
    assert "less every 10th sentence" in res.output
    results = json.loads((run / "results.json").read_text())
    assert results["test"]["punct_rule"] == "form"  # GENIA's UPOS column holds PTB tags
    assert results["test"]["uas"] > 0.25  # untrained: ~0.1; the full benchmark reaches ~0.88
    pred = read_conllu(run / "test_predictions.conllu")
    assert len(pred) == 50 and all(is_tree(s.heads) for s in pred)
