"""A model folder whose tokenizer files are not the model's own is refused before anything is
trained (issue 45, kind 7; google-research/bert#406, transformers#3097)."""

from __future__ import annotations

import json
import shutil

import pytest
from transformers import BertConfig
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.vocab.match import tokenizer_mismatch, vocab_checksum
from tests.conftest import write_ner_dir

runner = CliRunner()


@pytest.fixture
def swapped(tmp_path, tiny_encoder):
    """The tiny encoder (MiniLM's 30,522-row table) with a 2,000-word vocabulary swapped in."""
    folder = tmp_path / "swapped"
    shutil.copytree(tiny_encoder, folder)
    spec = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    spec["model"]["vocab"] = {w: i for w, i in vocab.items() if i < 2000}
    (folder / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    (folder / "vocab.txt").unlink(missing_ok=True)
    return folder


def test_finetune_ner_refuses_a_swapped_vocabulary_naming_both_sizes(tmp_path, swapped):
    data = write_ner_dir(tmp_path / "ner", train="aspirin\tB-Chem\nhelps\tO\n",
                         dev="aspirin\tB-Chem\n", test="aspirin\tB-Chem\n")
    res = runner.invoke(app, ["finetune", "ner", "--data", str(data), "--model", str(swapped),
                              "-o", str(tmp_path / "run"), "--device", "cpu", "--epochs", "1"])
    out = " ".join(res.output.split())
    assert res.exit_code == 1, out
    assert "not the model's own" in out and "2000 tokens" in out and "30522 embedding rows" in out
    assert "Traceback" not in out and not (tmp_path / "run").exists()


def test_pretrain_refuses_a_swapped_vocabulary(tmp_path, swapped):
    corpus = tmp_path / "c.txt"
    corpus.write_text("aspirin inhibits platelet aggregation .\n" * 50, encoding="utf-8")
    res = runner.invoke(app, ["pretrain", "--corpus", str(corpus), "--model", str(swapped),
                              "-o", str(tmp_path / "run"), "--max-steps", "1", "--device", "cpu"])
    out = " ".join(res.output.split())
    assert res.exit_code == 1 and "not the model's own" in out and "2000 tokens" in out, out


def test_padding_special_ids_and_the_saved_checksum(tokenizer):
    assert tokenizer_mismatch(BertConfig(vocab_size=30528), tokenizer) == []  # padded to 8
    assert tokenizer_mismatch(BertConfig(vocab_size=len(tokenizer), pad_token_id=1),
                              tokenizer) == ["the model's pad token id is 1, the tokenizer's 0"]
    same = BertConfig(vocab_size=len(tokenizer))
    assert tokenizer_mismatch(same, tokenizer, {"vocab_sha256": vocab_checksum(tokenizer)}) == []
    (problem,) = tokenizer_mismatch(same, tokenizer, {"vocab_sha256": "0123456789abcdef"})
    assert "checksum" in problem and "0123456789abcdef" in problem
