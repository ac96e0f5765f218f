"""Every registered task owns its whole surface (issue 30): for each task of the registry, its three
commands exist with the options it declares, a tiny run writes its headline metrics to
``results.json`` and a model card that renders them, its TAPT text comes out, and the saved model
reloads, scores (one :class:`~bertkit.tasks.base.Evaluation`) and predicts.

Nothing here names a task: a new task is tested by registering it and giving its tiny data as
``write_<name>_dir(root)`` in ``tests/tasks/<name>/conftest.py`` (NER's is in ``tests/conftest.py``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.settings.options import field_options
from bertkit.tasks.registry import get_task, task_names
from tests.test_bad_input_kinds import command_options

TESTS = Path(__file__).resolve().parent
runner = CliRunner()


def _data_writer(name: str):
    """``write_<name>_dir`` from the task's test conftest (or the shared one)."""
    for path in (TESTS / "tasks" / name / "conftest.py", TESTS / "conftest.py"):
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"_surface_{name}_{path.parent.name}",
                                                          path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if hasattr(module, f"write_{name}_dir"):
                return getattr(module, f"write_{name}_dir")
    raise AssertionError(f"no write_{name}_dir(root) in tests/tasks/{name}/conftest.py")


@pytest.mark.parametrize("name", task_names())
def test_the_three_commands_have_the_options_the_task_declares(name):
    options = command_options(app)
    task = get_task(name)
    commands = task.config_class.commands
    declared = {
        "finetune": field_options(task.config_class),
        "evaluate": commands.evaluate_options, "predict": commands.predict_options}
    for verb, opts in declared.items():
        have = options[f"{verb} {name}"]
        for opt in opts:
            for flag in opt.flags:
                assert set(flag.split("/")) <= have, f"bertkit {verb} {name} lacks {flag}"
    assert {"--epochs", "--lr", "--seeds", "--recipe"} <= options[f"finetune {name}"]
    assert {"--model", "--output"} <= options[f"evaluate {name}"] & options[f"predict {name}"]
    # finetune's --help shows each setting's own default
    shown = runner.invoke(app, ["finetune", name, "--help"], env={"COLUMNS": "300"}).output
    shown = " ".join(shown.replace("│", " ").split())
    assert f"[default: {task.config_class.data}]" in shown


@pytest.fixture(scope="module", params=task_names())
def run(request, tmp_path_factory, tiny_encoder):
    name = request.param
    root = tmp_path_factory.mktemp(f"surface-{name}")
    data = _data_writer(name)(root / "data")
    out = root / "run"
    res = runner.invoke(app, ["finetune", name, "--data", str(data), "--model", tiny_encoder,
                              "--epochs", "1", "--batch-size", "4", "--device", "cpu",
                              "-o", str(out)])
    assert res.exit_code == 0, res.output
    return name, data, out, root


def test_results_carry_the_headline_metrics_and_the_card_shows_them(run):
    name, _, out, _ = run
    task = get_task(name)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["task"] == name and task.headline
    assert task.select_metric in results["test"]
    for metric in task.headline:
        assert isinstance(results["test"][metric.key], (int, float)), metric.key
    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    assert f"pipeline_tag: {task.card.pipeline_tag}" in card
    assert f"bertkit {task.card.command}" in card and task.card.auto_class in card
    first = task.headline[0]
    assert f"name: {first.name}" in card
    assert f"{results['test'][first.key] * first.scale:.2f}" in card  # the results table
    assert ("in points (x 100)" in card) == any(m.scale != 1 for m in task.headline)


def test_tapt_text_comes_out(run):
    from bertkit.workflows.task_text import task_text_lines

    name, data, _, _ = run
    lines = task_text_lines(f"{name}:{data}")
    assert lines and all(line.strip() == line and "\n" not in line for line in lines)
    assert len(task_text_lines(f"{name}:{data}", 1)) <= 2  # one example: a text (and its pair)


def test_the_saved_model_reloads_scores_and_predicts(run):
    from bertkit.data.sets import resolve_local
    from bertkit.tasks.base import Evaluation

    name, data, out, root = run
    task = get_task(name)
    ev = task.evaluate(str(out), str(data), "test", device="cpu")
    assert isinstance(ev, Evaluation) and ev.examples and ev.predictions_text().strip()
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    # a regression's correlations move with float noise in near-constant tiny-model outputs
    tol = 1e-3 if name == "sim" else 1e-6
    for metric in task.headline:  # the reloaded model scores test as the run did
        assert ev.metrics[metric.key] == pytest.approx(results["test"][metric.key], abs=tol)
    test_file = resolve_local(str(data), task.data_kind, task.extensions, ("test",))["test"]
    pred = root / "predictions.out"
    res = runner.invoke(app, ["predict", name, "--model", str(out), "--input", str(test_file),
                              "--output", str(pred), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert pred.read_text(encoding="utf-8").strip()
    res = runner.invoke(app, ["evaluate", name, "--model", str(out), "--data", str(data),
                              "--device", "cpu", "--output", str(root / "m.json")])
    assert res.exit_code == 0, res.output
    scored = json.loads((root / "m.json").read_text(encoding="utf-8"))
    assert scored[task.select_metric] == pytest.approx(ev.metrics[task.select_metric])


@pytest.mark.parametrize("name", task_names())
def test_every_finetune_option_is_a_settings_field_with_its_default(name):
    # each option of `finetune NAME` is a declared field of the task's settings, and --help
    # shows that field's default (issue 46: the old form of this test could not fail)
    import re

    import typer

    cls = get_task(name).config_class
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    declared = {o.name: o for o in field_options(cls)}
    command = typer.main.get_command(app).commands["finetune"].commands[name]
    seen = set()
    for param in command.params:
        if param.name == "recipe":
            continue
        opt = declared[param.name]  # a KeyError: an option no settings field declares
        found = re.search(r"\[default: ([^\]]+)\]", param.help or "")
        real = defaults[param.name]
        if opt.shown is not None:  # described in words: shown as declared, or not at all
            assert (found.group(1) if found else "") == opt.shown, param.name
        elif isinstance(real, (int, float)) and not isinstance(real, bool):
            assert float(found.group(1)) == pytest.approx(real), (param.name, found, real)
        elif isinstance(real, str):
            assert found.group(1) == real, param.name
        seen.add(param.name)
    assert seen == set(declared)  # and every declared option is on the command line


def test_seeds_summary_shows_the_headline_metrics_first():
    from rich.console import Console

    from bertkit.outputs.tables import seed_table

    stat = {"mean": 0.5, "std": 0.1, "ci95_low": 0.4, "ci95_high": 0.6, "n": 2,
            "values": [0.4, 0.6]}
    summary = {"seeds": [1, 2], "select_metric": "las",
               "metrics": {"test": {"loss": {**stat, "values": [2.0, 3.0]}, "uas": stat,
                                    "las": stat}}}
    console = Console(width=200, record=True)
    headline = tuple(m.key for m in get_task("dep").headline)
    console.print(seed_table(summary, "dep", headline))
    text = console.export_text()
    assert headline == ("las", "uas")
    assert text.index("las") < text.index("uas") < text.index("loss")


@pytest.mark.parametrize("name", task_names())
def test_settings_outside_their_declared_choices_are_refused_without_the_command_line(name):
    # recipe files and Python build settings too: a declared choice is checked by validate()
    from bertkit.errors import BertkitError

    cls = get_task(name).config_class
    fields = [f for f in dataclasses.fields(cls)
              if f.metadata.get("option") is not None and f.metadata["option"].choices]
    for f in fields:
        settings = cls(**{f.name: "no-such-choice"})
        with pytest.raises(BertkitError, match=f.name.replace("_", "[-_]")):
            settings.validate()
    assert fields, f"{name} declares no choices"
