"""Pretraining ModernBERT and DeBERTa-v2/v3 in two gloo processes (DDP and FSDP, issue 64): the
same losses as one process with the same global batch (span masking + SBO)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.encoder_families import make_tiny
from tests.tasks.pretrain.conftest import write_corpus


def _losses(run):
    return [json.loads(line)["loss"] for line in (run / "metrics.jsonl").read_text().splitlines()
            if json.loads(line)["type"] == "train"]


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
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    one = subprocess.run([sys.executable, "-m", "bertkit", *args, "-o", str(tmp_path / "one")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert one.returncode == 0, one.stderr[-2000:]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc_per_node", "2", "-m", "bertkit", *args,
                          "-o", str(tmp_path / "two")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert two.returncode == 0, (two.stdout[-2000:], two.stderr[-3000:])
    a, b = _losses(tmp_path / "one"), _losses(tmp_path / "two")
    assert len(a) == len(b) == 3
    assert a == pytest.approx(b, rel=1e-3)
    assert (tmp_path / "two" / "model" / "sbo.safetensors").is_file()
