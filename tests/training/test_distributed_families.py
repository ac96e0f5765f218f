"""Pretraining ModernBERT and DeBERTa-v2/v3 in two gloo processes (DDP and FSDP, issue 64): the
same losses as one process with the same global batch (span masking + SBO)."""

from __future__ import annotations


import pytest

from tests.encoder_families import make_tiny
from tests.training.test_distributed import run_one_and_two
from tests.tasks.pretrain.conftest import write_corpus


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ddp", "fsdp"])
@pytest.mark.parametrize("family", ["modernbert", "deberta-v2"])
def test_two_gloo_processes_pretrain_as_one(family, engine, tmp_path, tokenizer):
    model = make_tiny(family, tmp_path / family, tokenizer)  # no dropout: runs compare
    corpus = write_corpus(tmp_path / "corpus.txt", lines=200)
    args = ["pretrain", "--corpus", str(corpus), "--model", model, "--masking", "span",
            "--max-steps", "3", "--batch-size", "8", "--max-seq-length", "32", "--lr", "1e-3",
            "--warmup", "0", "--logging-steps", "1", "--device", "cpu", "--precision", "fp32",
            "--cache-dir", str(tmp_path / "cache"), *(["--fsdp"] if engine == "fsdp" else [])]
    a, b = run_one_and_two(args, tmp_path)
    assert len(a) == len(b) == 3
    assert a == pytest.approx(b, rel=1e-3)
    assert (tmp_path / "two" / "model" / "sbo.safetensors").is_file()
