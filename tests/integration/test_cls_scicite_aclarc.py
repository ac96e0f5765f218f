"""SciCite and ACL-ARC end to end on small slices with the packaged MiniLM (needs BERTKIT_DATA)."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app


@pytest.mark.integration
@pytest.mark.parametrize("name,n_labels,extra", [
    ("scicite", 3, []), ("acl-arc", 6, ["--class-weights", "balanced"])])
def test_finetune_cls_registered_sets(tmp_path, name, n_labels, extra):
    run = tmp_path / name
    res = CliRunner().invoke(app, [
        "finetune", "cls", "--data", name, "--max-train-samples", "200",
        "--max-eval-samples", "100", "--epochs", "1", "--lr", "1e-4", "--batch-size", "16",
        "--max-length", "128", "--device", "cpu", "-o", str(run), *extra])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    test = results["test"]
    assert len(results["labels"]) <= n_labels and test["support"] == 100
    assert 0.0 <= test["macro_f1"] <= 1.0
    confusion = test["confusion"]  # rows gold, columns predicted: its diagonal is the accuracy
    assert sum(map(sum, confusion)) == 100
    assert sum(confusion[i][i] for i in range(len(confusion))) / 100 == pytest.approx(
        test["accuracy"])
    assert test["micro_f1"] == pytest.approx(test["accuracy"])
    # the majority baseline beside the scores, in results.json and in the printed table
    assert 0 < test["baseline"]["majority_share"] <= 1 and "baseline (all " in res.output
    assert results["shortened_texts"]["train"] >= 0 and (run / "test_confusion.png").is_file()
    res = CliRunner().invoke(app, ["evaluate", "cls", "-m", str(run), "--data", name,
                                   "--split", "test", "--device", "cpu",
                                   "--output", str(tmp_path / "m.json")])
    assert res.exit_code == 0, res.output
    full = json.loads((tmp_path / "m.json").read_text())
    assert full["support"] > 100  # the whole test split
