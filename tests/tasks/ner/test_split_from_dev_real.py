"""``--split-from-dev`` end to end on real BC5CDR dev/test files only (the form in
which many biomedical sets are shared), with the packaged MiniLM (needs BERTKIT_DATA)."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.conll import read_conll


@pytest.mark.integration
def test_dev_test_only_directory_trains_on_dev_less_a_tenth(tmp_path):
    src = Path(os.environ["BERTKIT_DATA"]).resolve() / "ner" / "bc5cdr"  # links need a full path
    data = tmp_path / "devtest"
    data.mkdir()
    for name in ("dev.tsv", "test.tsv"):
        (data / name).symlink_to(src / name)
    base = ["finetune", "ner", "--data", str(data), "--max-eval-samples", "100", "--epochs", "1",
            "--lr", "1e-4", "--batch-size", "16", "--device", "cpu"]
    refused = CliRunner().invoke(app, base + ["-o", str(tmp_path / "no")])
    assert refused.exit_code == 1 and "--split-from-dev 0.1" in " ".join(refused.output.split())
    assert not (tmp_path / "no").exists()
    run = tmp_path / "run"
    res = CliRunner().invoke(app, base + ["--split-from-dev", "0.1", "--max-train-samples", "200",
                                          "-o", str(run)])
    assert res.exit_code == 0, res.output
    assert "less every 10th sentence" in res.output
    n_dev = len(read_conll(src / "dev.tsv").sentences)
    results = json.loads((run / "results.json").read_text())
    split = results["split_from_dev"]
    assert split["fraction"] == 0.1 and not split["automatic"]
    assert split["split_train"] + split["split_dev"] == n_dev and split["split_dev"] == n_dev // 10
    assert (split["train"], split["dev"]) == (200, 100)  # after --max-*-samples
    assert results["dev"] is not None and 0 <= results["test"]["f1"] <= 1
    assert len((run / "test_predictions.conll").read_text().strip().split("\n\n")) == 100
