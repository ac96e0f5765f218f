"""What is kept is checked before it is reused: ``--seeds --resume`` refuses kept seeds trained
with other settings, and a kept ``bertkit run`` stage whose model is missing or damaged is run
again (issue 31)."""

from __future__ import annotations

import pytest

from bertkit.errors import BertkitError

from bertkit.tasks.ner.config import NERConfig


# --- --seeds --resume: a kept seed must have been trained with the same settings ---------------

def _seed_runs(tmp_path, monkeypatch, lr_saved: float):
    """Seeds 1 and 2 finished with ``lr_saved`` (config.yaml as the driver writes it); the
    driver's single run replaced by one that records which seeds train."""
    from bertkit.settings.layers import dump_yaml, to_dict
    from bertkit.tasks import driver

    model = tmp_path / "enc"
    model.mkdir()
    base = NERConfig(data=str(tmp_path), model=str(model), output_dir=str(tmp_path / "out"),
                     seeds="1,2", lr=lr_saved)
    for seed in (1, 2):
        folder = tmp_path / "out" / f"seed-{seed}"
        folder.mkdir(parents=True)
        sub = NERConfig(**{**to_dict(base), "seed": seed, "seeds": None,
                           "output_dir": str(folder)})
        (folder / "config.yaml").write_text(dump_yaml({**to_dict(sub), "model": str(model)}))
        (folder / "results.json").write_text('{"dev": {"f1": 0.5}, "test": {"f1": 0.4}}')
    trained = []

    def one(task, sub, console=None):
        trained.append(sub.seed)
        return {"dev": {"f1": 0.9}, "test": {"f1": 0.8}, "model": str(model)}

    monkeypatch.setattr(driver, "_finetune_one", one)
    return base, trained


def test_seeds_resume_with_changed_settings_is_refused_naming_them(tmp_path, monkeypatch):
    import dataclasses

    from bertkit.tasks.driver import finetune_seeds
    from bertkit.tasks.registry import get_task

    base, trained = _seed_runs(tmp_path, monkeypatch, lr_saved=2e-4)
    same = dataclasses.replace(base, resume=True)
    summary = finetune_seeds(get_task("ner"), same, [1, 2])  # same settings: both kept
    assert trained == [] and summary["metrics"]["test"]["f1"]["values"] == [0.4, 0.4]
    changed = dataclasses.replace(base, resume=True, lr=1e-4)
    with pytest.raises(BertkitError, match=r"seed 1 \(lr: saved 0\.0002, now 0\.0001\); "
                                           r"seed 2 \(lr: .*--resume --overwrite"):
        finetune_seeds(get_task("ner"), changed, [1, 2])
    assert trained == []
    rerun = dataclasses.replace(base, resume=True, overwrite=True, lr=1e-4)
    summary = finetune_seeds(get_task("ner"), rerun, [1, 2])  # --overwrite: retrained
    assert trained == [1, 2] and summary["metrics"]["test"]["f1"]["values"] == [0.8, 0.8]


# --- a kept stage's product is checked before a later stage reads it ---------------------------

def _fake_training(cfg, console):
    """A training stage that finishes at once: results.json and a small real model/."""
    import json
    from pathlib import Path

    import torch
    from safetensors.torch import save_file

    from bertkit.training.rundir import RunComplete

    folder = Path(cfg.output_dir)
    if cfg.resume and (folder / "results.json").is_file():
        raise RunComplete(folder)
    (folder / "model").mkdir(parents=True, exist_ok=True)
    (folder / "model" / "config.json").write_text('{"model_type": "bert"}')
    save_file({"w": torch.zeros(4, 4)}, str(folder / "model" / "model.safetensors"))
    (folder / "results.json").write_text(json.dumps({"model": cfg.model}))
    _fake_training.calls.append(folder.name)
    return {"model": cfg.model}


def test_a_kept_stage_with_a_missing_or_damaged_model_is_not_used(tmp_path, monkeypatch):
    from rich.console import Console

    from bertkit.workflows import recipes

    _fake_training.calls = []
    monkeypatch.setitem(recipes.COMMANDS, "finetune ner",
                        (recipes.COMMANDS["finetune ner"][0], f"{__name__}:_fake_training"))
    path = tmp_path / "two.yaml"
    path.write_text("stages:\n  - {name: pre, command: finetune ner}\n"
                    "  - {name: post, command: finetune ner, settings: {model: '@pre'}}\n")
    root = tmp_path / "run"
    recipes.run_recipe(recipes.load(path), root)
    assert _fake_training.calls == ["pre", "post"]
    console = Console(record=True, width=300)
    recipes.run_recipe(recipes.load(path), root, console)  # whole: both kept
    text = console.export_text()
    assert "stage pre: finished earlier, kept" in text
    assert "--set pre.overwrite=true trains it again" in text and " --overwrite" not in text
    weights = root / "pre" / "model" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:40])  # cut short
    with pytest.raises(BertkitError, match=r"stage pre finished earlier, but its model is "
                                           r"missing or damaged: .*model.safetensors cannot be "
                                           r"read.*--set pre.overwrite=true to run stage pre"):
        recipes.run_recipe(recipes.load(path), root)
    (root / "pre" / "model" / "config.json").unlink()
    with pytest.raises(BertkitError, match="has no config.json"):
        recipes.run_recipe(recipes.load(path), root)
    assert _fake_training.calls == ["pre", "post"]
    # the advised flag exists in `bertkit run` and runs the stage (and the next) again
    rec = recipes.apply_overrides(recipes.load(path), ["pre.overwrite=true"])
    recipes.run_recipe(rec, root)
    assert _fake_training.calls == ["pre", "post", "pre", "post"]
    assert (root / "pre" / "model" / "config.json").is_file()
