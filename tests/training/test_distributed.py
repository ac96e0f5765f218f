"""Multi-process training: sharding, loss weighting, and a real 2-process gloo run (torchrun)
that matches one process with the same global batch and writes one set of outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bertkit.training.distributed import global_loss_scale, shard_batch
from tests.conftest import write_ner_dir

SENTENCES = [
    ("Aspirin induced renal failure .", "B-Chemical O B-Disease I-Disease O"),
    ("Cisplatin causes nephrotoxicity in rats .", "B-Chemical O B-Disease O O O"),
    ("No entities here", "O O O"),
    ("Lithium toxicity was reported after long treatment with high doses .",
     "B-Chemical O O O O O O O O O O"),
    ("Haloperidol", "B-Chemical"),
]


def _conll(n: int) -> str:
    out = []
    for i in range(n):
        words, tags = SENTENCES[i % len(SENTENCES)]
        out.append("\n".join(f"{w}\t{t}" for w, t in zip(words.split(), tags.split())))
    return "\n\n".join(out) + "\n"


@pytest.mark.parametrize("rows, world", [(8, 2), (7, 2), (5, 3), (2, 2)])
def test_shards_cover_every_row_once(monkeypatch, rows, world):
    batch = {"x": torch.arange(rows), "scalar": torch.tensor(1.5)}
    seen = []
    for r in range(world):
        monkeypatch.setenv("RANK", str(r))
        monkeypatch.setenv("WORLD_SIZE", str(world))
        part = shard_batch(batch, rows)
        assert part["scalar"].item() == 1.5  # non-row entries kept whole
        seen.extend(part["x"].tolist())
        assert abs(len(part["x"]) - rows / world) < 1
    assert seen == list(range(rows))


def test_one_process_needs_no_scaling():
    assert global_loss_scale(17, torch.device("cpu")) == 1.0




def _losses(run: Path) -> list[float]:
    return [r["loss"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
            if r["type"] == "train"]


def run_one_and_two(args: list[str], tmp_path: Path) -> tuple[list[float], list[float]]:
    """Run ``bertkit *args`` as one process (``tmp_path/one``) and as two gloo processes under
    torchrun (``tmp_path/two``); each must exit 0. Returns both runs' logged training losses."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    one = subprocess.run([sys.executable, "-m", "bertkit", *args, "-o", str(tmp_path / "one")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert one.returncode == 0, one.stderr[-2000:]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc_per_node", "2", "-m", "bertkit", *args,
                          "-o", str(tmp_path / "two")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert two.returncode == 0, (two.stdout[-2000:], two.stderr[-3000:])
    return _losses(tmp_path / "one"), _losses(tmp_path / "two")


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ddp", "fsdp"])
def test_two_gloo_processes_match_one_process(tmp_path, still_encoder, engine):
    data = write_ner_dir(tmp_path / "d", train=_conll(24), dev=_conll(5), test=_conll(5))
    args = ["finetune", "ner", "--data", str(data), "--model", still_encoder, "--epochs", "2",
            "--batch-size", "8", "--lr", "1e-3", "--logging-steps", "1", "--device", "cpu",
            "--precision", "fp32",  # auto is bf16 on AMX-BF16 CPUs: not equal across reductions
            *(["--fsdp"] if engine == "fsdp" else [])]
    a, b = run_one_and_two(args, tmp_path)
    assert len(a) == len(b) == 6  # 3 global batches of 8 per epoch, 2 epochs
    assert a == pytest.approx(b, rel=1e-4, abs=1e-5)
    for name in ("results.json", "test_predictions.conll", "environment.json"):
        assert (tmp_path / "two" / name).is_file()
    assert json.loads((tmp_path / "two" / "environment.json").read_text())["world_size"] == 2
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == \
        sorted(p.name for p in (tmp_path / "one").iterdir())
    # the same trained model whichever engine ran it (checkpoints are full state dicts)
    assert (json.loads((tmp_path / "two" / "results.json").read_text())["test"]["f1"] ==
            pytest.approx(json.loads((tmp_path / "one" / "results.json").read_text())["test"]["f1"]))
    one_w = torch.load(tmp_path / "one" / "checkpoints" / "best.pt", weights_only=True)
    two_w = torch.load(tmp_path / "two" / "checkpoints" / "best.pt", weights_only=True)
    assert one_w.keys() == two_w.keys()
    for key in one_w:
        torch.testing.assert_close(one_w[key], two_w[key], atol=1e-4, rtol=1e-3)
