"""Issue 46: one settings path. ``finetune``, ``adapt``'s fine-tuning stage and ``bertkit run``
build the same fine-tuning settings for the same data set and encoder (the data set's dev-chosen
recipe included), each says where they came from, and ``config.yaml`` records it."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from bertkit.settings.layers import config_yaml, replace, sources_line, to_dict
from bertkit.workflows.command_settings import build_settings, finetune_settings

runner = CliRunner()
PLUMBING = ("output_dir", "overwrite", "resume")  # where a command writes, not how it trains


def _training(cfg) -> dict:
    return {k: v for k, v in to_dict(cfg).items() if k not in PLUMBING}


def _capture(monkeypatch, task: str) -> dict:
    """Replace ``finetune_<task>`` (read from the registry at call time) by a recorder."""
    import importlib

    seen: dict = {}

    def fake(cfg, console=None):
        seen["cfg"] = cfg
        return {}

    monkeypatch.setattr(importlib.import_module(f"bertkit.tasks.{task}"), f"finetune_{task}", fake)
    return seen


@pytest.mark.parametrize("task, data", [("cls", "scicite"), ("ner", "bc5cdr"),
                                        ("qa", "squad")])
def test_finetune_adapt_and_run_build_the_same_finetuning_settings(monkeypatch, tmp_path, task,
                                                                   data):
    from bertkit.cli import app
    from bertkit.encoders import default_model
    from bertkit.workflows.recipes import load, run_recipe
    from bertkit.workflows.adapt import AdaptConfig, finetune_config

    seen = _capture(monkeypatch, task)
    res = runner.invoke(app, ["finetune", task, "--data", data, "-o", str(tmp_path / "ft")])
    assert res.exit_code == 0, res.output
    via_finetune = seen.pop("cfg")
    assert "(data-set default: recipe" in res.output.splitlines()[0]

    via_adapt = finetune_config(AdaptConfig(task=task, data=data, task_text="task"),
                                default_model(), tmp_path / "adapt", 42)

    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"description: x\ncommand: finetune {task}\nsettings: {{data: {data}}}\n")
    run_recipe(load(recipe), tmp_path / "run")
    via_run = seen.pop("cfg")

    expected = _training(via_finetune)
    expected["model"] = None  # finetune leaves the packaged encoder unnamed; adapt names it
    assert _training(via_run) == expected
    assert {**_training(via_adapt), "model": None} == expected
    tuned = finetune_settings(task, data).config  # the entry point bertkit bench calls
    assert _training(tuned) == expected
    assert tuned.lr != type(tuned)().lr  # the data set's recipe did apply
    for cfg in (via_finetune, via_adapt, via_run):
        assert "data-set default: recipe" in sources_line(cfg)


def test_adapt_applies_the_base_encoders_settings_to_the_adapted_model(tmp_path):
    from bertkit.workflows.adapt import AdaptConfig, finetune_config

    cfg = AdaptConfig(task="cls", data="scicite", task_text="task")
    adapted = finetune_config(cfg, str(tmp_path / "pretrain" / "tapt" / "model"), tmp_path, 42)
    assert adapted.lr == 2e-4 and adapted.batch_size == 16  # scicite-cls-minilm
    other = finetune_config(AdaptConfig(task="cls", data="scicite", model="bert-base-cased",
                                        task_text="task"), "bert-base-cased", tmp_path, 42)
    assert other.lr == type(other)().lr  # chosen for the packaged encoder, not for this one


def test_layers_in_order_and_sources_named(tmp_path):
    from bertkit.tasks.cls.config import CLSConfig

    recipe = tmp_path / "r.yaml"
    recipe.write_text("lr: 3.0e-5\nepochs: 5\n")
    built = build_settings(CLSConfig, "finetune cls", flags={"data": "scicite", "epochs": 2},
                           recipe=recipe, overrides={"epochs": 4, "seed": 7},
                           fixed={"output_dir": str(tmp_path)})
    cfg = built.config
    assert (cfg.lr, cfg.epochs, cfg.seed, cfg.batch_size) == (3e-5, 4, 7, 16)
    assert built.sources["lr"] == "recipe" and built.sources["epochs"] == "--set"
    assert built.sources["batch_size"] == "data-set default" and "output_dir" not in built.sources
    assert built.dataset_recipe == "scicite-cls-minilm"
    line = built.line()
    assert line.startswith("settings: data scicite (flag); epochs 4, seed 7 (--set); lr 3e-5 "
                           "(recipe); ")
    assert "(data-set default: recipe scicite-cls-minilm" in line


def test_config_yaml_records_the_line_and_reads_back_as_the_settings(tmp_path):
    import yaml

    built = finetune_settings("cls", "scicite", overrides={"epochs": 1})
    text = config_yaml(to_dict(built.config), built.config)
    assert text.startswith("# settings: data scicite (flag); epochs 1 (--set); ")
    assert yaml.safe_load(text) == to_dict(built.config)
    copy = replace(built.config, seed=3)  # what --seeds and adapt's stages do
    assert sources_line(copy) == built.line() and copy.seed == 3
    assert sources_line(dataclasses.replace(built.config)) is None  # why replace() exists


def test_finetune_settings_refuses_an_unknown_task_or_setting():
    from bertkit.errors import BertkitError

    with pytest.raises(BertkitError, match="unknown task 'nope'"):
        finetune_settings("nope")
    with pytest.raises(BertkitError, match="unknown option 'lrr'"):
        finetune_settings("cls", "scicite", overrides={"lrr": 1.0})


def test_squad_brings_its_dev_chosen_recipe():
    """``finetune qa --data squad`` on the packaged encoder trains with ``squad-qa-minilm``: the
    settings of the README's 38.43 F1 row (lr 2e-4 chosen on dev, batch 12, 2 epochs), not the
    built-in lr 5e-5 and batch 32 (issue 46: a third of the optimiser steps, 11.9 F1)."""
    from bertkit.tasks.qa.config import QAConfig

    built = finetune_settings("qa", data="squad")
    cfg = built.config
    assert built.dataset_recipe == "squad-qa-minilm"
    assert (cfg.lr, cfg.batch_size, cfg.epochs, cfg.warmup, cfg.weight_decay) == \
        (2e-4, 12, 2, 0.1, 0.01)
    assert (QAConfig().lr, QAConfig().batch_size) == (5e-5, 32)  # so the recipe did the change
    assert built.sources["lr"] == "data-set default"
    assert "(data-set default: recipe squad-qa-minilm" in built.line()
    assert finetune_settings("qa").dataset_recipe == "squad-qa-minilm"  # squad is qa's default
    for data, model in (("squad-v2", None), ("covid-qa", None), ("squad", "bert-base-uncased")):
        other = finetune_settings("qa", data=data, model=model)  # chosen for squad + MiniLM only
        assert other.dataset_recipe is None and other.config.lr == 5e-5
    flagged = finetune_settings("qa", data="squad", overrides={"batch_size": 32})
    assert (flagged.config.batch_size, flagged.config.lr) == (32, 2e-4)
