"""End to end on real ChemProt with the packaged MiniLM encoder (needs BERTKIT_DATA)."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app


@pytest.mark.integration
def test_finetune_evaluate_re_chemprot_small_budget_beats_majority(tmp_path):
    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "finetune", "re", "--data", "chemprot", "--max-train-samples", "400",
        "--max-eval-samples", "100", "--epochs", "2", "--lr", "2e-4", "--batch-size", "16",
        "--device", "cpu", "-o", str(run)])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    # the first 100 test pairs: the most frequent label covers 26 of them
    assert results["test"]["micro_f1"] > 0.30
    assert results["negative_label"] is None  # SciBERT's release has no negative pairs
    assert results["test"]["micro_f1"] == pytest.approx(results["test"]["accuracy"])
    assert (run / "test_confusion.png").is_file()
    # evaluate on the same 100 dev pairs (a subset folder in tmp): the saved model's score
    # equals the best epoch's dev score recorded during training
    src = Path(os.environ["BERTKIT_DATA"]) / "re" / "chemprot"
    sub = tmp_path / "sub"
    sub.mkdir()
    for split in ("train", "dev", "test"):
        lines = (src / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()[:100]
        (sub / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "dev.json"
    res = CliRunner().invoke(app, ["evaluate", "re", "-m", str(run), "--data", str(sub),
                                   "--split", "dev", "--output", str(out), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    dev = json.loads(out.read_text())
    assert dev["support"] == 100
    assert dev["micro_f1"] == pytest.approx(results["dev"]["micro_f1"])
