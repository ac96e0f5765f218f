"""Each set registered in issue 42 trains a few steps from the shared data with the packaged MiniLM
encoder, through the command a user types (needs BERTKIT_DATA)."""

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.sets import entry

FEW = ["--max-train-samples", "16", "--max-eval-samples", "16", "--max-steps", "2",
       "--batch-size", "8", "--device", "cpu"]
SETS = [("ner", "bc5-chem"), ("ner", "bc5-disease"), ("ner", "bc2gm"), ("ner", "jnlpba"),
        ("ner", "sciie"), ("re", "sciie"), ("re", "ddi"), ("sim", "biosses"), ("cls", "hoc"),
        ("cls", "pubmedqa")]


def _finetune(task, name, run, *extra):
    res = CliRunner().invoke(app, ["finetune", task, "--data", name, "-o", str(run), *FEW,
                                   *extra])
    assert res.exit_code == 0, res.output
    return json.loads((run / "results.json").read_text()), " ".join(res.output.split())


@pytest.mark.integration
@pytest.mark.parametrize("task,name", SETS)
def test_each_new_set_trains_a_few_steps(tmp_path, task, name):
    results, _ = _finetune(task, name, tmp_path / "run")
    e = entry(task, name)
    assert isinstance(results["test"][e.metric], float)  # the papers' metric is reported
    card = (tmp_path / "run" / "model" / "README.md").read_text()
    if e.license:
        assert f"license: {e.license}" in card
    assert ("non-commercial" in card) == (name == "ddi")
    if name == "ddi":
        assert results["negative_label"] == "false"
    if name == "hoc":
        assert results["multi_label"] and results["labels"] and len(results["labels"]) == 10
        assert set(results["shortened_texts"]) == {"train", "dev", "test"}
        assert results["test"]["hoc_documents"] == 16
    if name == "pubmedqa":
        assert results["labels"] == ["maybe", "no", "yes"]
    if name == "biosses":  # the set's recipe: the dev-chosen bi-encoder (issue 63)
        assert results["architecture"] == "bi-encoder" and results["objective"] == "cosent"
        assert (tmp_path / "run" / "model" / "modules.json").is_file()
        zero = results["zero_shot"]["test"]  # the first 16 test pairs (--max-eval-samples)
        assert zero["support"] == 16 and results["test"]["zero_shot_pearson"] == zero["pearson"]


@pytest.mark.integration
def test_encoder_pretrained_on_the_corpus_warns_on_bc2gm(tmp_path):
    from bertkit.encoders import default_model

    enc = tmp_path / "enc" / "model"
    shutil.copytree(default_model(), enc)
    corpus = Path(os.environ["BERTKIT_DATA"]) / "corpus" / "train.txt"
    (enc / "bertkit.json").write_text(json.dumps({"task": "pretrain", "corpus": str(corpus)}))
    results, text = _finetune("ner", "bc2gm", tmp_path / "run", "-m", str(enc))
    assert "4,864 of 4,939 test sentences" in text and "contaminated" in text
    assert results["contamination"]["test"] == 4864
