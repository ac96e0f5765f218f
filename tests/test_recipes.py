"""Recipes: every shipped recipe parses, overrides and stage references work, `bertkit run`."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from bertkit.workflows import recipes
from bertkit.cli import app
from bertkit.workflows.recipes import load_recipe, run_settings
from bertkit.settings.layers import build_config
from bertkit.errors import BertkitError
from bertkit.tasks.ner import NERConfig
from tests.conftest import write_ner_dir

runner = CliRunner()


def test_every_shipped_recipe_parses_with_a_description_and_known_commands():
    found = {r.name: r for r in recipes.list_recipes()}
    assert {"bc5cdr-ner", "bc5cdr-ner-minilm", "chemprot-re", "genia-dep"} <= set(found)
    for rec in found.values():
        assert rec.description, rec.path
        for stage in rec.stages:
            assert stage.command in set(recipes.COMMANDS) | {"vocab build"}


def test_recipes_command_lists_them():
    res = runner.invoke(app, ["recipes"])
    assert res.exit_code == 0
    assert "bc5cdr-ner-minilm" in res.output and "finetune ner" in res.output


def test_recipes_table_fits_80_columns_without_breaking_names_or_commands():
    """At 80 columns only the description wraps: each name whole on its row, one stage's
    command a line (mini-scibert: vocab build, pretrain, pretrain)."""
    res = runner.invoke(app, ["recipes"], env={"COLUMNS": "80"})
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    cells = [[c.strip() for c in line.split("│")[1:3]] for line in lines if line.startswith("│")]
    start = cells.index(["mini-scibert", "vocab build"])
    assert [c[1] for c in cells[start:start + 3]] == ["vocab build", "pretrain", "pretrain"]
    assert all(c[0] in ("", *[r.name for r in recipes.list_recipes()]) for c in cells)


def test_overrides_global_and_per_stage(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("description: two\nstages:\n"
                    "  - {name: a, command: finetune ner, settings: {lr: 1.0e-4, epochs: 3}}\n"
                    "  - {name: b, command: finetune ner, settings: {lr: 2.0e-4}}\n")
    rec = recipes.apply_overrides(recipes.load(path), ["lr=3e-5", "b.epochs=1", "crf=false"])
    assert rec.stages[0].settings == {"lr": 3e-5, "epochs": 3, "crf": False}
    assert rec.stages[1].settings == {"lr": 3e-5, "epochs": 1, "crf": False}
    with pytest.raises(BertkitError, match="no stage 'c'"):
        recipes.apply_overrides(rec, ["c.lr=1"])
    with pytest.raises(BertkitError, match="key=value"):
        recipes.apply_overrides(rec, ["lr"])


@pytest.mark.parametrize("text, message", [
    ("just text\n", "must be a mapping"),
    ("description: x\n", "needs 'command'"),
    ("command: finetune nope\n", "unknown command 'finetune nope'"),
    ("stages: []\n", "non-empty list"),
    ("stages:\n  - {name: a, command: finetune ner}\n  - {name: a, command: finetune ner}\n",
     "stage names repeat"),
    ("command: finetune ner\nsettings: [1, 2]\n", "'settings' must be a mapping"),
    ("command: [unclosed\n", "not valid YAML"),
])
def test_bad_recipes_are_named_with_the_file(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(BertkitError, match=message) as err:
        recipes.load(path)
    assert str(path) in str(err.value)


def test_stage_references_resolve_to_earlier_products(tmp_path, monkeypatch):
    calls = []
    fake = types.ModuleType("fake_stage_module")

    from dataclasses import dataclass

    @dataclass
    class FakeConfig:
        model: str | None = None
        output_dir: str | None = None

    def fake_run(cfg, console):
        calls.append((cfg.model, cfg.output_dir))
        return {"ok": True}

    fake.FakeConfig, fake.fake_run = FakeConfig, fake_run
    monkeypatch.setitem(sys.modules, "fake_stage_module", fake)
    monkeypatch.setitem(recipes.COMMANDS, "finetune fake",
                        ("fake_stage_module:FakeConfig", "fake_stage_module:fake_run"))
    path = tmp_path / "r.yaml"
    path.write_text("stages:\n  - {name: one, command: finetune fake, settings: {model: base}}\n"
                    "  - {name: two, command: finetune fake, settings: {model: '@one'}}\n")
    out = recipes.run_recipe(recipes.load(path), tmp_path / "runs")
    assert out == {"one": {"ok": True}, "two": {"ok": True}}
    assert calls == [("base", str(tmp_path / "runs" / "one")),
                     (str(tmp_path / "runs" / "one" / "model"), str(tmp_path / "runs" / "two"))]
    path.write_text("stages:\n  - {name: one, command: finetune fake, settings: {model: '@two'}}\n")
    with pytest.raises(BertkitError, match="names no earlier stage"):
        recipes.run_recipe(recipes.load(path), tmp_path / "runs2")


def test_load_recipe_accepts_the_run_form_for_its_command_only(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("description: d\ncommand: finetune ner\nsettings: {lr: 1.0e-4, crf: true}\n")
    assert load_recipe(path, "finetune ner") == {"lr": 1e-4, "crf": True}
    with pytest.raises(BertkitError, match="not 'finetune re'"):
        load_recipe(path, "finetune re")
    assert load_recipe("bc5cdr-ner-minilm", "finetune ner")["crf"] is True  # by name


def test_chemprot_minilm_recipe_builds_the_benchmarked_re_settings():
    """The ChemProt row's settings (benchmarks/re_vs_stock.py's bertkit side) as a recipe."""
    from bertkit.tasks.re import REConfig

    settings = load_recipe("chemprot-re-minilm", "finetune re")
    assert "model" not in settings  # the packaged encoder: runs offline
    cfg = build_config(REConfig, settings, source="chemprot-re-minilm")
    assert (cfg.data, cfg.pooling, cfg.epochs, cfg.lr, cfg.batch_size) == (
        "chemprot", "cls", 3, 2e-4, 32)
    assert (cfg.warmup, cfg.weight_decay, cfg.max_grad_norm) == (0.1, 0.01, 1.0)


def test_every_registered_set_recipe_is_for_its_task_and_names_its_set():
    """A set's ``recipe=`` (its dev-chosen defaults for the packaged encoder) loads for the set's
    ``finetune`` command, trains on that very set and names no other encoder."""
    from bertkit.data import sets

    with_recipe = [e for e in sets._REGISTRY.values() if e.recipe]
    names = {(e.task, e.name): e.recipe for e in with_recipe}
    assert names[("sim", "biosses")] == "biosses-sim-minilm"
    assert names[("ner", "bc5cdr")] == "bc5cdr-ner-minilm"
    assert names[("ner", "sciie")] == "sciie-ner-minilm"
    assert names[("ner", "bc5-chem")] == "bc5-chem-ner-minilm"
    assert names[("ner", "bc5-disease")] == "bc5-disease-ner-minilm"
    assert names[("ner", "bc2gm")] == "bc2gm-ner-minilm"
    assert names[("ner", "jnlpba")] == "jnlpba-ner-minilm"
    assert names[("cls", "pubmedqa")] == "pubmedqa-cls-minilm"
    assert names[("cls", "hoc")] == "hoc-cls-minilm"
    assert names[("re", "sciie")] == "sciie-re-minilm"
    assert names[("re", "ddi")] == "ddi-re-minilm"
    for e in with_recipe:
        settings = load_recipe(e.recipe, f"finetune {e.task}")
        assert settings["data"] == e.name, e.recipe
        assert "model" not in settings, e.recipe


def test_run_a_one_stage_recipe_end_to_end(tmp_path, tiny_encoder):
    data = write_ner_dir(tmp_path / "d")
    path = tmp_path / "r.yaml"
    path.write_text(f"description: tiny\ncommand: finetune ner\nsettings:\n  data: {data}\n"
                    f"  model: {tiny_encoder}\n  epochs: 2\n  lr: 1.0e-3\n")
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", str(path), "--set", "epochs=1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 1 and (out / "model" / "config.json").is_file()
    said = " ".join(res.output.split())  # where the settings came from, as finetune prints it
    assert "epochs 1 (--set); " in said  # the override is labelled as one, not as the recipe
    assert "lr 1e-3 (recipe); the rest built-in defaults" in said and "epochs 1, " not in said


def test_every_shipped_stage_builds_its_command_config():
    """Every key of every shipped recipe is an option of its command, with the right type."""
    import inspect

    from bertkit.settings.layers import build_config
    from bertkit.vocab.build import build_vocab

    vocab_keys = set(inspect.signature(build_vocab).parameters)
    for rec in recipes.list_recipes():
        for stage in rec.stages:
            settings = {k: ("/some/dir" if isinstance(v, str) and v.startswith("@") else v)
                        for k, v in stage.settings.items()}
            if stage.command == "vocab build":
                assert set(settings) <= vocab_keys, (rec.name, set(settings) - vocab_keys)
                continue
            cls = recipes._load_attr(recipes.COMMANDS[stage.command][0])
            cfg = build_config(cls, settings, source=f"{rec.path} stage {stage.name}")
            cfg.check_ranges()


def test_unset_variable_in_a_recipe_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("BERTKIT_DATA", raising=False)
    path = tmp_path / "r.yaml"
    path.write_text("stages:\n  - {name: one, command: pretrain, "
                    "settings: {corpus: $BERTKIT_DATA/corpus/train.txt}}\n")
    with pytest.raises(BertkitError, match=r"uses \$BERTKIT_DATA, which is not set"):
        recipes.run_recipe(recipes.load(path), tmp_path / "runs")
    assert not (tmp_path / "runs" / "one").exists()


def test_recipe_option_expands_variables(tmp_path, monkeypatch):
    from bertkit.workflows.recipes import load_recipe

    path = tmp_path / "r.yaml"
    path.write_text("data: $BERTKIT_DATA/ner/bc5cdr\nlr: 1e-4\n")
    monkeypatch.setenv("BERTKIT_DATA", "/data/root")
    assert load_recipe(path) == {"data": "/data/root/ner/bc5cdr", "lr": "1e-4"}
    monkeypatch.delenv("BERTKIT_DATA")
    with pytest.raises(BertkitError, match=r"uses \$BERTKIT_DATA, which is not set"):
        load_recipe(path)


def test_run_settings_layers_saved_run_recipe_and_flags(tmp_path, monkeypatch):
    """One function builds every command's settings: defaults < saved run (--resume) < recipe
    < flags; a value of the wrong type names the recipe file."""
    from bertkit.settings.layers import dump_yaml
    from bertkit.tasks.ner.config import NERConfig

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(dump_yaml({"lr": 3e-4, "epochs": 7, "seed": 5,
                                                "resume": False}))
    recipe = tmp_path / "r.yaml"
    recipe.write_text("epochs: 2\nbatch_size: 4\ndata: $BERTKIT_DATA/ner/x\n")
    monkeypatch.setenv("BERTKIT_DATA", "/d")
    flags = {"output_dir": str(run), "resume": True, "batch_size": 8, "lr": None}
    cfg = run_settings(NERConfig, "finetune ner", flags, recipe)
    assert (cfg.lr, cfg.seed, cfg.epochs, cfg.batch_size, cfg.data, cfg.resume) == \
        (3e-4, 5, 2, 8, "/d/ner/x", True)
    fresh = run_settings(NERConfig, "finetune ner", {**flags, "resume": None}, recipe)
    assert (fresh.lr, fresh.seed, fresh.epochs) == (NERConfig().lr, NERConfig().seed, 2)
    recipe.write_text("epochs: two\n")
    with pytest.raises(BertkitError, match=f"{recipe}.*option 'epochs' has the value 'two'"):
        run_settings(NERConfig, "finetune ner", {}, recipe)


def test_load_recipe_lives_in_recipes_only():
    import bertkit.settings.layers

    assert not hasattr(bertkit.settings.layers, "load_recipe")  # the deprecated shim is gone
    assert callable(load_recipe)


def test_a_complete_stage_is_kept_when_a_recipe_is_resumed(tmp_path, monkeypatch):
    from bertkit.training.rundir import RunComplete

    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text('{"test": {"f1": 0.5}}')

    def complete(cfg, console):
        raise RunComplete(out)

    monkeypatch.setitem(recipes.COMMANDS, "finetune ner",
                        (recipes.COMMANDS["finetune ner"][0], "tests.test_recipes:_complete"))
    monkeypatch.setattr(sys.modules[__name__], "_complete", complete, raising=False)
    stage = recipes.Stage("main", "finetune ner", {"resume": True})
    results, product, kept = recipes.run_stage(stage, out)
    assert results == {"test": {"f1": 0.5}} and product == str(out / "model") and kept


def test_stages_after_one_that_ran_again_start_again(tmp_path, monkeypatch):
    """A finished stage is kept; once a stage runs again (here: --set pre.overwrite=true), the
    stages after it start again (overwrite), since the model they read has changed."""
    from bertkit.training.rundir import RunComplete

    calls = []

    def fake(cfg, console):
        folder = Path(cfg.output_dir)
        calls.append((folder.name, bool(cfg.resume), bool(cfg.overwrite)))
        if cfg.resume and (folder / "results.json").is_file():
            raise RunComplete(folder)
        (folder / "model").mkdir(parents=True, exist_ok=True)  # a later stage reads it
        (folder / "model" / "config.json").write_text("{}")
        (folder / "model" / "pytorch_model.bin").write_bytes(b"weights")
        (folder / "results.json").write_text('{"n": %d}' % len(calls))
        return {"n": len(calls)}

    monkeypatch.setitem(recipes.COMMANDS, "finetune ner",
                        (recipes.COMMANDS["finetune ner"][0], "tests.test_recipes:_fake"))
    monkeypatch.setattr(sys.modules[__name__], "_fake", fake, raising=False)
    stages = [recipes.Stage("pre", "finetune ner", {}),
              recipes.Stage("post", "finetune ner", {"model": "@pre"})]
    rec = recipes.Recipe("two", tmp_path / "two.yaml", "", stages)
    root = tmp_path / "run"
    console = Console(record=True, width=200)
    assert recipes.run_recipe(rec, root, console) == {"pre": {"n": 1}, "post": {"n": 2}}
    assert "starts again" not in console.export_text()  # a first run restarts nothing
    calls.clear()  # the same command again: both kept by their records, no command started
    assert recipes.run_recipe(rec, root) == {"pre": {"n": 1}, "post": {"n": 2}}
    assert calls == []
    calls.clear()  # the first stage built again: the second must not keep its old result
    rec = recipes.Recipe("two", tmp_path / "two.yaml", "", [
        recipes.Stage("pre", "finetune ner", {"overwrite": True}),
        stages[1]])
    assert recipes.run_recipe(rec, root, console) == {"pre": {"n": 1}, "post": {"n": 2}}
    assert calls == [("pre", False, True), ("post", False, True)]
    assert "stage post: starts again, since stage pre ran again" in console.export_text()


@pytest.mark.parametrize("text, seeds", [("seeds: [1, 2, 3]", "1,2,3"), ("seeds: 7", "7"),
                                         ("seeds: '1,2'", "1,2"), ("seeds: [4]", "4")])
def test_recipe_seeds_as_a_list_an_int_or_text(tmp_path, text, seeds):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(text + "\n")
    cfg = run_settings(NERConfig, "finetune ner", {}, recipe)
    assert cfg.seeds == seeds
    cfg.validate()  # parse_seeds accepts what was kept


@pytest.mark.parametrize("value", [["a", 2], [True], [], 1.5])
def test_recipe_seeds_of_another_kind_are_refused_naming_the_file(tmp_path, value):
    with pytest.raises(BertkitError, match=r"r\.yaml.*option 'seeds' has the value .*a list of "
                                           r"integers or one integer"):
        build_config(NERConfig, {"seeds": value}, source=str(tmp_path / "r.yaml"))
