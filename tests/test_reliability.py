"""Reliability with real processes: a pretraining run killed with SIGKILL resumes to the same
model and metrics as an uninterrupted run; a 2-process gloo pretraining matches one process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.tasks.pretrain.conftest import write_corpus

pytestmark = pytest.mark.slow

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
CHECKPOINT_FILES = ("model.pt", "state.pt")  # bertkit.training.checkpoint: what resume loads


def incomplete_checkpoints(directory: Path) -> list[str]:
    """``step_N: why`` for each checkpoint folder in ``directory`` that lacks a file resume
    needs, or whose file does not load (cut short), or whose state has no loop position."""
    bad = []
    for ckpt in sorted(directory.glob("step_*")):
        missing = [f for f in CHECKPOINT_FILES if not (ckpt / f).is_file()]
        if missing:
            bad.append(f"{ckpt.name}: no {', '.join(missing)}")
            continue
        try:
            torch.load(ckpt / "model.pt", map_location="cpu", weights_only=True)
            state = torch.load(ckpt / "state.pt", map_location="cpu", weights_only=False)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the finding
            bad.append(f"{ckpt.name}: {type(exc).__name__}")
            continue
        if not isinstance(state, dict) or "rng" not in state:
            bad.append(f"{ckpt.name}: state.pt without its RNG states")
    return bad


def test_an_incomplete_checkpoint_is_found(tmp_path):
    """The check above fails on what it means to catch (issue 66: it asserted state.pt *or* a
    non-empty folder, true of a checkpoint without its weights)."""
    from bertkit.training.checkpoint import save_checkpoint

    save_checkpoint(tmp_path, 5, {"w": torch.zeros(2)}, {"position": {"step": 5}}, keep=3)
    save_checkpoint(tmp_path, 10, {"w": torch.ones(2)}, {"position": {"step": 10}}, keep=3)
    assert incomplete_checkpoints(tmp_path) == []
    (tmp_path / "step_5" / "model.pt").unlink()
    (tmp_path / "step_10" / "state.pt").write_bytes(b"cut")
    assert incomplete_checkpoints(tmp_path) == ["step_10: UnpicklingError", "step_5: no model.pt"]


def _args(corpus: Path, model: str, out: Path, cache: Path, steps: int, masking: str = "span"):
    # fp32: --precision auto is bf16 on a CPU with AMX-BF16, where one process and two (another
    # reduction order) differ beyond the tolerances below; the same on every CI machine
    return ["pretrain", "--corpus", str(corpus), "--model", model, "--masking", masking,
            "--max-steps", str(steps), "--batch-size", "8", "--max-seq-length", "64",
            "--lr", "1e-3", "--save-steps", "5", "--logging-steps", "1", "--eval-steps", "1000",
            "--cache-dir", str(cache), "--device", "cpu", "--precision", "fp32", "-o", str(out)]


def _train_losses(run: Path) -> list[float]:
    return [r["loss"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
            if r["type"] == "train"]


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run / "model" / "model.safetensors"))


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path, still_encoder):
    corpus = write_corpus(tmp_path / "corpus.txt", lines=600)
    cache = tmp_path / "cache"
    steps = 60
    full = tmp_path / "full"
    done = subprocess.run([sys.executable, "-m", "bertkit", *_args(corpus, still_encoder, full,
                                                                   cache, steps)],
                          capture_output=True, text=True, env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]

    cut = tmp_path / "cut"
    proc = subprocess.Popen([sys.executable, "-m", "bertkit", *_args(corpus, still_encoder, cut,
                                                                     cache, steps)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    deadline = time.time() + 300
    while time.time() < deadline and not (cut / "checkpoints" / "step_15").is_dir():
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not (cut / "model").exists() and not (cut / "results.json").exists()
    steps_saved = sorted((cut / "checkpoints").glob("step_*"))
    assert steps_saved and incomplete_checkpoints(cut / "checkpoints") == []

    resumed = subprocess.run([sys.executable, "-m", "bertkit", "pretrain", "--resume", "-o",
                              str(cut)],  # the saved config.yaml gives every other setting
                             capture_output=True, text=True, env=ENV, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _train_losses(cut) == pytest.approx(_train_losses(full), rel=1e-6)
    a, b = _weights(full), _weights(cut)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-6), key
    ra = json.loads((full / "results.json").read_text())
    rb = json.loads((cut / "results.json").read_text())
    assert ra["steps"] == rb["steps"] == steps


def test_two_gloo_processes_pretrain_like_one(tmp_path, still_encoder):
    corpus = write_corpus(tmp_path / "corpus.txt", lines=300)
    cache = tmp_path / "cache"
    one, two = tmp_path / "one", tmp_path / "two"
    common = _args(corpus, still_encoder, one, cache, 6, masking="token")
    r1 = subprocess.run([sys.executable, "-m", "bertkit", *common], capture_output=True,
                        text=True, env=ENV, timeout=600)
    assert r1.returncode == 0, r1.stderr[-2000:]
    r2 = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                         "--nproc_per_node", "2", "-m", "bertkit",
                         *_args(corpus, still_encoder, two, cache, 6, masking="token")],
                        capture_output=True, text=True, env=ENV, timeout=600)
    assert r2.returncode == 0, (r2.stdout[-2000:], r2.stderr[-3000:])
    assert _train_losses(two) == pytest.approx(_train_losses(one), rel=1e-4)
    assert len(_train_losses(one)) == 6
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one.iterdir())


def test_fsdp_pretrain_matches_one_process_and_resumes(tmp_path, still_encoder):
    """FSDP (2 gloo processes; the tied MLM decoder in the root unit) trains like one process;
    its full-state checkpoints resume under FSDP to the same losses and saved model. (Token
    masking: with span masking the SBO loss is weighted across ranks by masked-token counts,
    which matches one process only to about 1e-3.)"""
    corpus = write_corpus(tmp_path / "corpus.txt", lines=300)
    cache = tmp_path / "cache"
    one, two = tmp_path / "one", tmp_path / "two"
    r1 = subprocess.run([sys.executable, "-m", "bertkit",
                         *_args(corpus, still_encoder, one, cache, 8, masking="token")],
                        capture_output=True, text=True, env=ENV, timeout=600)
    assert r1.returncode == 0, r1.stderr[-2000:]
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
              "2", "-m", "bertkit", *_args(corpus, still_encoder, two, cache, 8, masking="token"),
              "--fsdp"]
    r2 = subprocess.run(launch, capture_output=True, text=True, env=ENV, timeout=600)
    assert r2.returncode == 0, (r2.stdout[-2000:], r2.stderr[-3000:])
    assert len(_train_losses(one)) == 8
    assert _train_losses(two) == pytest.approx(_train_losses(one), rel=1e-4)
    w1, w2 = _weights(one), _weights(two)
    assert w1.keys() == w2.keys()
    for key in w1:
        torch.testing.assert_close(w1[key], w2[key], atol=1e-4, rtol=1e-3)
    # resume from the step-5 checkpoint (a full state dict) under FSDP: same end
    ckpts = two / "checkpoints"
    assert sorted(p.name for p in ckpts.iterdir() if p.name.startswith("step_"))[-1] == "step_8"
    import shutil

    shutil.rmtree(ckpts / "step_8")
    (two / "results.json").unlink()  # else --resume finds the run complete and does nothing
    r3 = subprocess.run(launch + ["--resume"], capture_output=True, text=True, env=ENV,
                        timeout=600)
    assert r3.returncode == 0, (r3.stdout[-2000:], r3.stderr[-3000:])
    assert _train_losses(two) == pytest.approx(_train_losses(one), rel=1e-4)
    for key, value in _weights(two).items():
        torch.testing.assert_close(value, w1[key], atol=1e-4, rtol=1e-3)
