"""End to end on a slice of real LitBank with the packaged MiniLM encoder: 4 training documents
cut to 2 segments of 128 pieces each, 1 dev and 1 test document (each about 2,000 words, read
whole), one epoch."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.conll2012 import read_conll2012

LITBANK = Path(os.environ.get("BERTKIT_DATA", "/nonexistent")) / "coref" / "litbank"


@pytest.mark.integration
@pytest.mark.skipif(not LITBANK.is_dir(), reason="BERTKIT_DATA/coref/litbank not available")
def test_finetune_coref_litbank_slice_writes_whole_documents(tmp_path):
    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "finetune", "coref", "--data", "litbank", "--max-train-samples", "4",
        "--max-eval-samples", "1", "--epochs", "1", "--max-length", "128",
        "--max-train-segments", "2", "--device", "cpu", "-o", str(run)])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    test = results["test"]
    assert test["documents"] == 1 and 0.0 <= test["conll_f1"] <= 100.0
    assert test["conll_f1"] == pytest.approx((test["muc_f1"] + test["bcub_f1"] + test["ceafe_f1"]) / 3)
    gold = read_conll2012(sorted((LITBANK / "test").glob("*.conll"))[0])
    (pred,) = read_conll2012(run / "test_predictions.conll")
    assert pred.words == gold[0].words  # every word of the ~2,000-word document written back
    assert (run / "model" / "coref.safetensors").is_file()
