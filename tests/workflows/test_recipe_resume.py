"""`bertkit run` of a multi-stage recipe (vocab build -> pretraining -> more pretraining) stopped in
its second stage and run again with the same command: the vocabulary is kept, the stopped stage
continues from its checkpoint (same weights as a run never stopped) and the last stage starts."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from bertkit.cli import app
from tests.tasks.pretrain.conftest import write_corpus
from tests.workflows.test_adapt_resume import _sigterm_at  # one SIGTERM helper for both

runner = CliRunner()


def _recipe(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt", lines=200)
    path = tmp_path / "two-phase.yaml"
    common = (f"      corpus: {corpus}\n      masking: token\n      batch_size: 2\n"
              f"      max_seq_length: 32\n      device: cpu\n      save_steps: 0\n"
              f"      cache_dir: {tmp_path / 'cache'}\n")
    path.write_text(
        "description: tiny vocab, then two pretraining phases\nstages:\n"
        f"  - name: vocab\n    command: vocab build\n    settings:\n      corpus: {corpus}\n"
        "      size: 200\n      min_frequency: 1\n"
        "  - name: phase1\n    command: pretrain\n    settings:\n" + common +
        "      config: tiny\n      vocab: '@vocab'\n      max_steps: 6\n"
        "  - name: phase2\n    command: pretrain\n    settings:\n" + common +
        "      model: '@phase1'\n      max_steps: 2\n", encoding="utf-8")
    return path




def test_rerun_of_a_stopped_recipe_continues_it(tmp_path, monkeypatch):
    recipe = _recipe(tmp_path)
    out = tmp_path / "cut"
    with monkeypatch.context() as patch:
        _sigterm_at(patch, 3)
        res = runner.invoke(app, ["run", str(recipe), "-o", str(out)])
    text = " ".join(res.output.split())
    assert res.exit_code == 143, res.output
    assert "tokens (uncased, wordpiece) from" in text and "[UNK]" in text  # the vocab report
    phase1 = out / "phase1"
    saved = [p.name for p in (phase1 / "checkpoints").glob("step_*")]
    assert len(saved) == 1, saved
    step = int(saved[0][5:])
    assert 0 < step < 6
    assert f"to continue, run the same bertkit run command again with --output-dir {out}" in text
    assert not (out / "phase2").exists()
    vocab_mtime = (out / "vocab" / "stats.json").stat().st_mtime
    # the run never stopped, on the same vocabulary (two builds may order tied pieces apart)
    full = tmp_path / "full"
    shutil.copytree(out / "vocab", full / "vocab")
    res = runner.invoke(app, ["run", str(recipe), "-o", str(full)])
    assert res.exit_code == 0, res.output

    res = runner.invoke(app, ["run", str(recipe), "-o", str(out)])  # the same command again
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "stage vocab: finished earlier, kept" in text
    assert f"resuming from checkpoint step {step:,} (epoch 1," in text
    assert (out / "vocab" / "stats.json").stat().st_mtime == vocab_mtime
    assert (phase1 / "checkpoints" / f"step_{step}").is_dir()  # kept
    assert json.loads((phase1 / "results.json").read_text())["steps"] == 6
    assert json.loads((out / "phase2" / "results.json").read_text())["steps"] == 2
    for stage in ("phase1", "phase2"):  # the exact resume: as the run never stopped
        a = load_file(str(out / stage / "model" / "model.safetensors"))
        b = load_file(str(full / stage / "model" / "model.safetensors"))
        for key in b:
            assert torch.equal(a[key], b[key]), (stage, key)

    res = runner.invoke(app, ["run", str(recipe), "-o", str(out)])  # all finished: all kept
    assert res.exit_code == 0, res.output
    assert " ".join(res.output.split()).count("finished earlier, kept") == 3


def test_a_vocab_stage_built_with_other_settings_is_refused(tmp_path):
    recipe = _recipe(tmp_path)
    out = tmp_path / "run"
    (out / "vocab").mkdir(parents=True)
    (out / "vocab" / "stage.json").write_text(json.dumps(
        {"stage": "vocab", "settings": {"size": 100}, "results": {}}))
    res = runner.invoke(app, ["run", str(recipe), "-o", str(out)])
    assert res.exit_code == 1
    text = " ".join(res.output.split())
    assert "stage vocab finished with other settings:" in text and "size: 100 -> 200" in text
    assert "--set vocab.overwrite=true to build it again" in text
    assert "Traceback" not in res.output
    assert (out / "vocab" / "stage.json").is_file()  # nothing removed


def test_a_vocab_stage_kept_when_only_overwrite_or_progress_differ(tmp_path):
    """After ``--set overwrite=true`` the plain rerun keeps the vocabulary (overwrite and the
    progress display do not make it); a real setting still refuses."""
    from bertkit.errors import BertkitError
    from bertkit.workflows.recipe_stages import finished_vocab, record_vocab

    out = tmp_path / "vocab"
    out.mkdir()
    built = {"out": str(out), "size": 100, "overwrite": True, "show_progress": True}
    record_vocab("vocab", built, {"size": 100})
    again = {**built, "overwrite": None, "show_progress": False}
    assert finished_vocab("vocab", again) == {"size": 100}
    with pytest.raises(BertkitError, match=r"size: 100 -> 200"):
        finished_vocab("vocab", {**again, "size": 200})


@pytest.mark.parametrize("holds", [False, True])
def test_continue_settings_resumes_only_a_started_run(tmp_path, holds):
    from bertkit.workflows.recipe_stages import continue_settings

    folder = tmp_path / "seed-1" if holds else tmp_path
    folder.mkdir(exist_ok=True)
    if holds:
        (folder / "metrics.jsonl").write_text('{"step": 1}\n')
    assert continue_settings(["resume", "overwrite"], {"lr": 1}, tmp_path) == \
        {"lr": 1, "resume": holds}
    # a run stopped before its first checkpoint: nothing to continue, it starts again
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n')
    assert continue_settings(["resume", "overwrite"], {}, tmp_path) == \
        ({"resume": True} if holds else {"resume": False, "overwrite": True})
    (tmp_path / "results.json").write_text("{}")
    assert continue_settings(["resume", "overwrite"], {}, tmp_path) == {"resume": True}
    assert continue_settings(["resume", "overwrite"], {"overwrite": True}, tmp_path) == \
        {"overwrite": True}
    assert continue_settings(["task"], {"task": "ner"}, tmp_path) == {"task": "ner"}
