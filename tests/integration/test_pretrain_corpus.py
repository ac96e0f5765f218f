"""MLM loss falls on the shared corpus in a short tiny-model run (needs BERTKIT_DATA)."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app


@pytest.mark.integration
def test_span_sbo_pretraining_lowers_validation_loss_on_the_shared_corpus(tmp_path):
    corpus = Path(os.environ["BERTKIT_DATA"]) / "corpus"
    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "pretrain", "--corpus", str(corpus / "train.txt"), "--valid", str(corpus / "valid.txt"),
        "--config", "tiny", "--vocab", "minilm", "--masking", "span", "--max-steps", "24",
        "--batch-size", "8", "--max-seq-length", "64", "--lr", "3e-3", "--warmup", "2",
        "--eval-steps", "24", "--max-eval-sequences", "48", "--logging-steps", "4",
        "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "-o", str(run)])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    assert results["corpus_tokens"] > 4_000_000  # the whole corpus, unpadded, untruncated
    first = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert results["train"]["mlm_loss"] < first["mlm_loss"] - 1.0
    assert results["valid"]["loss"] < results["valid_initial"]["loss"] - 1.0
    assert results["valid"]["accuracy"] > results["valid_initial"]["accuracy"]
