"""`bertkit adapt` stopped in a stage (SIGTERM, as a scheduler's pre-emption) and run again with
the same command: the stage continues from its saved checkpoint (same weights as a run never
stopped), nothing it wrote is removed, and finished stages are skipped."""

from __future__ import annotations

import json
import os
import signal

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.tasks.pretrain.batches import PretrainBatches

runner = CliRunner()


def _args(encoder, data, out):
    return ["adapt", "--model", encoder, "--data", str(data), "--task-text", "task",
            "--max-seq-length", "8", "--pretrain-batch-size", "1", "--masking", "token",
            "--tapt-epochs", "1", "--epochs", "1", "--batch-size", "2", "--device", "cpu",
            "--cache-dir", str(out.parent / "cache"), "-o", str(out)]


def _sigterm_at(monkeypatch, at: int) -> None:
    """Send this process SIGTERM while the pretraining batch number ``at`` (0-based) is read."""
    original = PretrainBatches.iter_batches

    def iter_batches(self, epoch, start=0):
        for i, batch in enumerate(original(self, epoch, start), start):
            if i == at:
                os.kill(os.getpid(), signal.SIGTERM)
            yield batch

    monkeypatch.setattr(PretrainBatches, "iter_batches", iter_batches)


def _weights(folder):
    return load_file(str(folder / "model" / "model.safetensors"))


def test_rerun_continues_a_stopped_tapt_stage_and_keeps_its_checkpoint(
        tiny_encoder, ner_dir, tmp_path, monkeypatch):
    full = tmp_path / "full"
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, full))
    assert res.exit_code == 0, res.output
    total = json.loads((full / "summary.json").read_text())["stages"]["tapt"]["steps"]
    assert total >= 4  # enough steps to stop in the middle

    out = tmp_path / "cut"
    with monkeypatch.context() as patch:
        _sigterm_at(patch, 3)
        res = runner.invoke(app, _args(tiny_encoder, ner_dir, out))
    text = " ".join(res.output.split())  # rich wraps lines
    assert res.exit_code == 143, res.output
    tapt = out / "pretrain" / "tapt"
    saved = [p.name for p in (tapt / "checkpoints").glob("step_*")]
    assert len(saved) == 1, saved  # the step the signal stopped at (batches are read ahead)
    step = int(saved[0][5:])
    assert 0 < step < total
    assert f"stopped by SIGTERM at step {step}; checkpoint saved in {tapt / 'checkpoints'}" in text
    assert f"to continue, run the same bertkit adapt command with --output-dir {out}" in text
    assert "--resume" not in text  # adapt has no --resume: the same command continues
    assert "error:" not in text  # a stop the user asked for is not reported as a failure
    assert json.loads((tapt / "stage.json").read_text())["results"] is None  # started, not done
    logged = (tapt / "metrics.jsonl").read_text()

    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out))  # the same command again
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert f"stopped earlier, continuing from step {step}" in text
    assert (tapt / "checkpoints" / f"step_{step}").is_dir()  # kept, not removed by a fresh start
    assert (tapt / "metrics.jsonl").read_text().startswith(logged)  # earlier records kept
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stages"]["tapt"]["steps"] == total
    done = json.loads((tapt / "stage.json").read_text())
    assert done["results"]["steps"] == total
    # the exact resume: the same weights as the run that was never stopped
    cut, whole = _weights(tapt), _weights(full / "pretrain" / "tapt")
    assert cut.keys() == whole.keys()
    for key in whole:
        assert torch.equal(cut[key], whole[key]), key

    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out))  # everything finished: skipped
    assert res.exit_code == 0, res.output
    assert res.output.count("finished earlier, skipped") == 2  # TAPT and fine-tuning


def test_a_stopped_stage_with_a_changed_setting_is_refused_and_its_checkpoint_kept(tmp_path):
    """The one rule of stages: a stopped stage continues when only settings a resume may change
    differ; another setting is refused naming it (its checkpoint kept), --overwrite runs it."""
    from bertkit.workflows.stages import SettingsChanged, run_stage

    folder = tmp_path / "s"
    (folder / "checkpoints" / "step_7").mkdir(parents=True)
    for name in ("model.pt", "state.pt"):  # a complete checkpoint
        (folder / "checkpoints" / "step_7" / name).write_bytes(b"x")
    (folder / "stage.json").write_text(json.dumps(
        {"stage": "s", "settings": {"lr": 1e-4, "device": "cpu"}, "results": None}))
    calls = []

    def run():
        calls.append("run")
        return {"steps": 10}

    def resume():
        calls.append("resume")
        return {"steps": 10}

    # another device may change on a resume: the stopped run continues
    assert run_stage("s", folder, {"lr": 1e-4, "device": "cuda"}, run, False, None, resume) \
        == {"steps": 10}
    assert calls == ["resume"]
    (folder / "stage.json").write_text(json.dumps(
        {"stage": "s", "settings": {"lr": 1e-4}, "results": None}))
    with pytest.raises(SettingsChanged, match=r"stage s was started with other settings: "
                                              r"lr: 0.0001 -> 0.001") as refused:
        run_stage("s", folder, {"lr": 1e-3}, run, False, None, resume,
                  way_forward="--overwrite to run every stage again")
    assert "--overwrite to run every stage again" in str(refused.value)
    assert calls == ["resume"] and (folder / "checkpoints" / "step_7" / "model.pt").is_file()
    assert run_stage("s", folder, {"lr": 1e-3}, run, True, None, resume) == {"steps": 10}
    assert calls == ["resume", "run"]


def test_a_stage_stopped_by_an_older_bertkit_continues_and_one_without_checkpoint_restarts(
        tmp_path):
    """No ``stage.json`` (the stage was stopped by a bertkit that wrote it only at the end): a
    checkpoint there is continued (the run checks its own saved settings); a run that stopped
    before its first checkpoint has nothing to continue and starts again."""
    from bertkit.workflows.stages import run_stage

    folder = tmp_path / "old"
    (folder / "checkpoints" / "step_91").mkdir(parents=True)
    (folder / "metrics.jsonl").write_text('{"step": 91}\n')
    calls = []
    run = lambda: calls.append("run") or {"steps": 153}  # noqa: E731
    resume = lambda: calls.append("resume") or {"steps": 153}  # noqa: E731
    run_stage("s", folder, {"lr": 1e-4}, run, False, None, resume)
    assert calls == ["run"]  # step_91 is incomplete (no model.pt/state.pt): nothing to continue
    (folder / "stage.json").unlink()
    for name in ("model.pt", "state.pt"):
        (folder / "checkpoints" / "step_91" / name).write_bytes(b"x")
    run_stage("s", folder, {"lr": 1e-4}, run, False, None, resume)
    assert calls == ["run", "resume"]
    assert json.loads((folder / "stage.json").read_text())["results"] == {"steps": 153}
