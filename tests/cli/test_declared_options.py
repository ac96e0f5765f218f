"""Issue 46: every training command's options are declared once, on its settings class
(:mod:`bertkit.options`), and generated from there: each option of ``finetune TASK``,
``pretrain`` and ``adapt`` is a declared field, its help is the declared help, and ``--help``
shows the class's own default (never one typed a second time)."""

from __future__ import annotations

import dataclasses
import re

import pytest
import typer

from bertkit.cli import app
from bertkit.options import field_options, shown_default
from bertkit.tasks.pretrain.config import PretrainConfig
from bertkit.tasks.registry import get_task, task_names
from bertkit.workflows.adapt_config import AdaptConfig

COMMANDS = [(("finetune", n), get_task(n).config_class) for n in task_names()] + [
    (("pretrain",), PretrainConfig), (("adapt",), AdaptConfig)]
SKIPPED = {("pretrain",): {"epochs"}}  # pretraining counts optimiser steps


def _command(path):
    command = typer.main.get_command(app)
    for part in path:
        command = command.commands[part]
    return command


def _shown(text: str | None) -> str | None:
    found = re.search(r"\[default: ([^\]]+)\]", text or "")
    return found.group(1) if found else None


@pytest.mark.parametrize("path, config", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_is_a_declared_setting_showing_its_classes_default(path, config):
    declared = {o.name: o for o in field_options(config)}
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    names = []
    for param in _command(path).params:
        if param.name == "recipe":
            continue
        opt = declared[param.name]  # KeyError: an option typed outside its settings class
        names.append(param.name)
        assert param.help.startswith(opt.help.split("{sets}")[0]), param.name
        real = defaults[param.name]
        expected = opt.shown if opt.shown is not None else \
            shown_default(param.name, real, opt.flags)
        assert _shown(param.help) == (expected or None), (param.name, param.help)
        if opt.shown is None and isinstance(real, (int, float)) and not isinstance(real, bool):
            assert float(_shown(param.help)) == pytest.approx(real)  # the value itself
    assert set(names) == set(declared) - SKIPPED.get(path, set())
    assert _command(path).params[-1].name == "recipe"  # --recipe stays last in --help


def test_a_subclass_default_is_shown_with_the_base_declaration():
    # DepConfig declares epochs = 6 without option(): the loop's declaration, dep's default
    help_text = next(p.help for p in _command(("finetune", "dep")).params if p.name == "epochs")
    assert help_text.startswith("Passes over the training data.") and _shown(help_text) == "6"
    lr = next(p.help for p in _command(("pretrain",)).params if p.name == "lr")
    assert _shown(lr) == "1e-4" == shown_default("lr", PretrainConfig.lr)


def test_repeated_options_reach_the_settings_joined(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    import bertkit.tasks.pretrain.task as task

    seen = {}
    monkeypatch.setattr(task, "pretrain", lambda cfg, console=None: seen.update(cfg=cfg) or {})
    res = CliRunner().invoke(app, ["pretrain", "-c", "a.txt", "-c", "b.txt", "--max-steps", "3",
                                   "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert seen["cfg"].corpus == "a.txt,b.txt" and seen["cfg"].max_steps == 3
    assert res.output.startswith("settings: corpus a.txt,b.txt, max_steps 3 (flag)")
