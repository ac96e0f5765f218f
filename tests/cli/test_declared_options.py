"""Issue 46: every command's options are declared once and generated from there. A settings
class (:mod:`bertkit.settings.options`) declares ``finetune TASK``, ``pretrain``, ``adapt``, ``vocab
build|compare|extend``, ``run`` and ``bench run``: each option or argument is a declared field,
its help is the declared help, and ``--help`` shows the class's own default (never one typed a
second time). ``evaluate``/``predict TASK`` take the options the task's ``Commands`` declares,
with those defaults. The few commands left (listing, plotting, merging) hold no default at all,
and a command in none of these groups fails."""

from __future__ import annotations

import dataclasses
import re

import pytest
import typer

from bertkit.bench.options import BenchRunSettings
from bertkit.cli import app
from bertkit.settings.options import REQUIRED, field_options, shown_default
from bertkit.settings.recipe_files import RunSettings
from bertkit.tasks.pretrain.config import PretrainConfig
from bertkit.tasks.registry import get_task, task_names
from bertkit.vocab.options import (
    VocabBuildSettings,
    VocabCompareSettings,
    VocabExtendSettings,
)
from bertkit.workflows.adapt_config import AdaptConfig

COMMANDS = [(("finetune", n), get_task(n).config_class) for n in task_names()] + [
    (("pretrain",), PretrainConfig), (("adapt",), AdaptConfig),
    (("vocab", "build"), VocabBuildSettings), (("vocab", "compare"), VocabCompareSettings),
    (("vocab", "extend"), VocabExtendSettings), (("run",), RunSettings),
    (("bench", "run"), BenchRunSettings)]
SKIPPED = {("pretrain",): {"epochs"}}  # pretraining counts optimiser steps
RECIPE_LAYERED = {p for p, _ in COMMANDS if p[0] in ("finetune", "pretrain", "adapt")}
INFERENCE = [((verb, n), getattr(get_task(n).config_class.commands, f"{verb}_options"))
             for verb in ("evaluate", "predict") for n in task_names()]
NO_DEFAULTS = {("recipes",), ("plot",), ("bench", "report"), ("bench", "list"),
               ("bench", "status"), ("predict", "merge")}  # names and paths only: nothing a settings class would hold


def _command(path):
    command = typer.main.get_command(app)
    for part in path:
        command = command.commands[part]
    return command


def _leaves(command=None, path=()):
    command = command or typer.main.get_command(app)
    subs = getattr(command, "commands", None)
    if not subs:
        return [path]
    return [leaf for name, sub in subs.items() for leaf in _leaves(sub, (*path, name))]


def _shown(text: str | None) -> str | None:
    found = re.search(r"\[default: (.*)\]\s*$", text or "", re.DOTALL)  # [default: [PAD], ...]
    return found.group(1) if found else None


@pytest.mark.parametrize("path, config", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_is_a_declared_setting_showing_its_classes_default(path, config):
    declared = {o.name: o for o in field_options(config)}
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    names = []
    for param in _command(path).params:
        if param.name == "recipe" and path in RECIPE_LAYERED:
            continue
        opt = declared[param.name]  # KeyError: an option typed outside its settings class
        names.append(param.name)
        assert param.help.startswith(opt.help.split("{sets}")[0]), param.name
        assert (param.param_type_name == "argument") == opt.positional, param.name
        real = defaults[param.name]
        assert param.required == (real is dataclasses.MISSING), param.name
        assert param.default is None, param.name  # not given: the class's default stands
        expected = opt.shown if opt.shown is not None else None \
            if real is dataclasses.MISSING else shown_default(param.name, real, opt.flags)
        assert _shown(param.help) == (expected or None), (param.name, param.help)
        if opt.shown is None and isinstance(real, (int, float)) and not isinstance(real, bool):
            assert float(_shown(param.help)) == pytest.approx(real)  # the value itself
    assert set(names) == set(declared) - SKIPPED.get(path, set())
    if path in RECIPE_LAYERED:
        assert _command(path).params[-1].name == "recipe"  # --recipe stays last in --help


@pytest.mark.parametrize("path, options", INFERENCE, ids=[" ".join(p) for p, _ in INFERENCE])
def test_evaluate_and_predict_options_are_the_tasks_declared_ones(path, options):
    from bertkit.training.config import PRECISION_HELP

    declared = {o.name: o for o in options}
    params = _command(path).params
    assert [p.name for p in params] == list(declared)  # nothing typed outside the declaration
    for param in params:
        opt = declared[param.name]
        text = PRECISION_HELP if opt.name == "precision" else opt.help  # {sets}: the data sets
        assert re.fullmatch("[a-z0-9_, -]+".join(map(re.escape, text.split("{sets}"))),
                            param.help), param.name
        assert param.required == (opt.default is REQUIRED), param.name
        if opt.default is not REQUIRED:
            assert param.default == opt.default and param.show_default, param.name


@pytest.mark.parametrize("path", sorted(NO_DEFAULTS), ids=[" ".join(p) for p in NO_DEFAULTS])
def test_undeclared_commands_hold_no_default(path):
    for param in _command(path).params:
        assert param.default in (None, False), (path, param.name, param.default)


def test_every_command_is_declared_somewhere():
    known = {p for p, _ in COMMANDS} | {p for p, _ in INFERENCE} | NO_DEFAULTS
    assert set(_leaves()) == known


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


@pytest.mark.parametrize("function, config", [
    ("bertkit.vocab.build:build_vocab", VocabBuildSettings),
    ("bertkit.vocab.compare:compare_vocabs", VocabCompareSettings),
    ("bertkit.vocab.extend:extend_model", VocabExtendSettings),
    ("bertkit.bench.runner:Runner", BenchRunSettings)])
def test_library_defaults_equal_the_commands_settings(function, config):
    """The functions the commands call keep defaults of their own (a recipe's ``vocab build``
    stage calls build_vocab with its settings): each equals the settings class's, so the
    command and the library never train differently."""
    import importlib
    import inspect

    module, name = function.split(":")
    params = inspect.signature(getattr(importlib.import_module(module), name)).parameters
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    special = {"special_tokens": lambda v: ", ".join(v)}
    checked = 0
    for key, param in params.items():
        if key not in defaults or param.default is inspect.Parameter.empty:
            continue
        value = special.get(key, lambda v: v)(param.default)
        assert value == defaults[key] or (value is None and defaults[key] in (None, [])), key
        checked += 1
    assert checked >= 2
