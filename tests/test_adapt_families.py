"""``bertkit adapt`` on a ModernBERT and a DeBERTa-v2/v3 folder (issue 64): ``vocab extend``,
DAPT with span masking + SBO and the NER fine-tuning, end to end through the command line."""

from __future__ import annotations

import json

import pytest
from transformers import AutoModelForMaskedLM, AutoTokenizer
from typer.testing import CliRunner

from bertkit.cli import app
from tests.encoder_families import tiny_family  # noqa: F401 (fixture)
from tests.tasks.pretrain.conftest import write_corpus


@pytest.mark.slow
def test_adapt_extends_the_vocabulary_pretrains_and_fine_tunes_each_family(
        tiny_family, ner_dir, tmp_path):
    family = json.loads(open(f"{tiny_family}/config.json").read())["model_type"]
    corpus = write_corpus(tmp_path / "corpus.txt", lines=120)
    out = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "adapt", "-t", "ner", "-d", str(ner_dir), "-m", tiny_family, "--extend-vocab", "20",
        "-c", str(corpus), "--pretrain-steps", "2", "--masking", "span",
        "--pretrain-batch-size", "4", "--max-seq-length", "32", "--epochs", "1", "-b", "2",
        "--device", "cpu", "--no-compare", "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    vocab = summary["stages"]["vocab"]
    assert vocab["added"] > 0 and vocab["new_size"] == vocab["old_size"] + vocab["added"]
    assert summary["model"] == str(out / "pretrain" / "dapt" / "model")
    mlm = AutoModelForMaskedLM.from_pretrained(summary["model"])
    assert mlm.config.model_type == family
    assert mlm.get_input_embeddings().weight.shape[0] == vocab["new_size"]
    assert len(AutoTokenizer.from_pretrained(summary["model"])) == vocab["new_size"]
    assert (out / "pretrain" / "dapt" / "model" / "sbo.safetensors").is_file()
    ft = json.loads((out / "finetune" / "results.json").read_text())
    assert ft["model"] == summary["model"] and "f1" in ft["test"]
    if family == "deberta-v2":  # said by the stages that load it
        assert "note: DeBERTa-v2/v3 encoder: its own (eager) attention" in res.output
