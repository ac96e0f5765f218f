"""The newcomer's ``bertkit finetune ner --data bc5cdr``: a registered set brings the settings
chosen on its dev split for the packaged encoder, and the first line says where each setting came
from (issue 31)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner


from bertkit.workflows.recipes import describe_sources, run_settings, settings_with_sources
from bertkit.tasks.ner.config import NERConfig

runner = CliRunner()


# --- the newcomer's `bertkit finetune ner --data bc5cdr`: the set's dev-chosen settings -------

def test_a_registered_set_brings_its_recipe_settings_for_the_packaged_encoder():
    cfg = run_settings(NERConfig, "finetune ner", {"data": "bc5cdr"})
    assert (cfg.lr, cfg.crf, cfg.epochs, cfg.batch_size, cfg.warmup) == (2e-4, True, 3, 32, 0.1)
    # a flag wins over the set's default, the other defaults stay
    cfg = run_settings(NERConfig, "finetune ner", {"data": "bc5cdr", "lr": 1e-4, "crf": False})
    assert (cfg.lr, cfg.crf, cfg.batch_size) == (1e-4, False, 32)
    # another encoder: the settings were not chosen for it
    cfg = run_settings(NERConfig, "finetune ner", {"data": "bc5cdr", "model": "bert-base-cased"})
    assert (cfg.lr, cfg.crf) == (NERConfig().lr, NERConfig().crf)


def test_a_recipe_wins_over_the_sets_defaults_and_an_unregistered_folder_gets_none(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("lr: 3.0e-5\n")
    cfg, sources = settings_with_sources(NERConfig, "finetune ner", {}, recipe)
    assert (cfg.lr, cfg.crf) == (3e-5, True)  # crf from bc5cdr (the default data)
    assert sources["lr"] == "recipe" and sources["crf"] == "data-set default"
    cfg = run_settings(NERConfig, "finetune ner", {"data": str(tmp_path)})
    assert (cfg.lr, cfg.crf) == (NERConfig().lr, False)


@pytest.mark.parametrize("command, config, data, recipe, lr", [
    ("finetune re", "bertkit.tasks.re.config:REConfig", "chemprot", "chemprot-re-minilm", 2e-4),
    ("finetune cls", "bertkit.tasks.cls.config:CLSConfig", "scicite", "scicite-cls-minilm", 2e-4),
    ("finetune cls", "bertkit.tasks.cls.config:CLSConfig", "acl-arc", "acl-arc-cls-minilm", 1e-4),
])
def test_every_tuned_set_carries_its_recipe(command, config, data, recipe, lr):
    import importlib

    module, _, name = config.partition(":")
    cls = getattr(importlib.import_module(module), name)
    cfg, sources = settings_with_sources(cls, command, {"data": data})
    assert cfg.lr == lr and sources["_dataset_recipe"] == recipe


def test_the_first_line_says_where_each_setting_came_from(monkeypatch):
    from bertkit.cli import app
    import bertkit.tasks.ner as ner

    seen = {}

    def fake(cfg, console):
        seen["cfg"] = cfg
        return {}

    monkeypatch.setattr(ner, "finetune_ner", fake)
    res = runner.invoke(app, ["finetune", "ner", "--data", "bc5cdr", "--epochs", "2"])
    assert res.exit_code == 0, res.output
    first = res.output.splitlines()[0]
    assert first.startswith("settings: epochs 2, data bc5cdr (flag); lr 2e-4, batch_size 32")
    assert "crf true (data-set default: recipe bc5cdr-ner-minilm" in first
    assert first.endswith("the rest built-in defaults")
    assert seen["cfg"].crf is True and seen["cfg"].epochs == 2


def test_describe_sources_with_nothing_given():
    cfg, sources = settings_with_sources(NERConfig, "finetune ner",
                                         {"model": "bert-base-cased"})
    assert describe_sources(cfg, sources) == \
        "settings: model bert-base-cased (flag); the rest built-in defaults"
