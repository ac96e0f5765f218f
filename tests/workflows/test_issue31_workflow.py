"""Issue 31: the newcomer's first commands, ``bertkit run --set`` routing and typing, reused
seeds and stages that are checked before being kept, TAPT text from classification files."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bertkit.errors import BertkitError
from bertkit.recipes import describe_sources, run_settings, settings_with_sources
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


# --- small leftovers --------------------------------------------------------------------------

def test_ner_summary_names_the_tag_schemes_as_text_not_a_dict():
    from bertkit.tasks.ner.task import describe_schemes

    assert describe_schemes({"train": "IOB2", "dev": "IOB2", "test": "IOB2"}) == "tags IOB2"
    assert describe_schemes({"train": "IOB1", "dev": "IOB2", "test": "IOB2"}) == \
        "tags train IOB1, dev IOB2, test IOB2 (all read as IOB2)"


def test_a_console_writing_to_a_file_does_not_wrap_lines(tmp_path):
    from bertkit.cli._app import make_console

    console = make_console()  # under pytest stdout is captured: not a terminal
    assert not console.is_terminal
    path = "/a/very/long/model/path/" + "x" * 120
    with console.capture() as capture:
        console.print(f"run directory: {path}", highlight=False)
    assert capture.get() == f"run directory: {path}\n"


# --- bertkit run --set: routed to the stages that have the key, typed by the setting ----------

def _two_stage(tmp_path):
    from bertkit import recipes

    path = tmp_path / "two.yaml"
    path.write_text("stages:\n"
                    "  - {name: vocab, command: vocab build, settings: {corpus: c.txt}}\n"
                    "  - {name: pre, command: pretrain, settings: {vocab: '@vocab'}}\n"
                    "  - {name: ft, command: finetune re, settings: {model: '@pre'}}\n")
    return recipes.load(path)


def test_set_goes_to_the_stages_that_have_the_key(tmp_path):
    from bertkit.recipes import apply_overrides

    rec = apply_overrides(_two_stage(tmp_path), ["max_steps=100", "size=500", "lr=3e-5"])
    vocab, pre, ft = (s.settings for s in rec.stages)
    assert vocab == {"corpus": "c.txt", "size": 500}  # vocab build has no max_steps or lr
    assert pre["max_steps"] == 100 and pre["lr"] == 3e-5 and "size" not in pre
    assert ft["lr"] == 3e-5 and ft["max_steps"] == 100
    rec = apply_overrides(_two_stage(tmp_path), ["pre.lr=1e-4"])
    assert rec.stages[1].settings["lr"] == 1e-4 and "lr" not in rec.stages[2].settings


@pytest.mark.parametrize("item, message", [
    ("learning_rate=1e-4", r"no stage of recipe two has a setting 'learning_rate'.*stage vocab "
                           r"\(vocab build\): .*size.*stage pre \(pretrain\): .*masking"),
    ("vocab.lr=1e-4", r"stage vocab has no setting 'lr'.*a setting of stage vocab \(vocab "
                      r"build\): .*min_frequency"),
])
def test_set_of_a_key_no_stage_has_is_a_clear_message(tmp_path, item, message):
    from bertkit.recipes import apply_overrides

    with pytest.raises(BertkitError, match=message) as err:
        apply_overrides(_two_stage(tmp_path), [item])
    assert "TypeError" not in str(err.value) and "unexpected keyword" not in str(err.value)


def test_run_cli_set_with_an_unknown_key_exits_1_naming_the_keys(tmp_path):
    from bertkit.cli import app

    _two_stage(tmp_path)
    res = runner.invoke(app, ["run", str(tmp_path / "two.yaml"), "--set", "nope=1",
                              "-o", str(tmp_path / "out")])
    assert res.exit_code == 1 and "has a setting 'nope'" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()


def test_set_values_keep_the_declared_type_and_quotes_force_text(tmp_path):
    from bertkit.config import build_config
    from bertkit.recipes import apply_overrides
    from bertkit.tasks.re.config import REConfig

    rec = apply_overrides(_two_stage(tmp_path), [
        "ft.negative_label=1", "ft.seeds=1,2", "pre.masking='1'", "ft.lr='2e-5'",
        "ft.typed_markers=true", "ft.epochs=2", 'vocab.corpus="3"'])
    ft = rec.stages[2].settings
    assert ft["negative_label"] == "1" and ft["seeds"] == "1,2"  # text settings stay text
    assert rec.stages[1].settings["masking"] == "1" and rec.stages[0].settings["corpus"] == "3"
    assert ft["typed_markers"] is True and ft["epochs"] == 2
    assert ft["lr"] == "2e-5"  # quoted: text (build_config reads a number from it)
    cfg = build_config(REConfig, {k: v for k, v in ft.items() if k not in ("lr", "model")})
    assert cfg.negative_label == "1"


# --- --seeds --resume: a kept seed must have been trained with the same settings ---------------

def _seed_runs(tmp_path, monkeypatch, lr_saved: float):
    """Seeds 1 and 2 finished with ``lr_saved`` (config.yaml as the driver writes it); the
    driver's single run replaced by one that records which seeds train."""
    from bertkit.config import dump_yaml, to_dict
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

    from bertkit import recipes

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


# --- TAPT text from classification files and ID<TAB>TEXT files; adapt --task cls ---------------

def test_task_text_from_a_classification_jsonl_csv_and_id_tab_text(tmp_path):
    from bertkit.workflows.task_text import task_text_lines

    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text('{"text": "Cells were grown as described [3].", "label": "method"}\n'
                     '{"text": "We compare with earlier work.", "label": "background"}\n')
    assert task_text_lines(str(jsonl)) == ["Cells were grown as described [3].",
                                           "We compare with earlier work."]
    csv = tmp_path / "t.csv"
    csv.write_text('label,text\nx,"One text, with a comma."\ny,Two texts\n')
    assert task_text_lines(str(csv)) == ["One text, with a comma.", "Two texts"]
    tabbed = tmp_path / "abstracts.tsv"
    tabbed.write_text("id\ttext\nP1\tAspirin induced renal failure .\nP2\tB-cell lines grew .\n")
    assert task_text_lines(str(tabbed)) == ["Aspirin induced renal failure .",
                                            "B-cell lines grew ."]
    plain_ids = tmp_path / "ids.txt"
    plain_ids.write_text("1\tA first sentence here .\n2\tA second one .\n")
    assert task_text_lines(str(plain_ids)) == ["A first sentence here .", "A second one ."]


def test_task_text_errors_name_no_option_that_adapt_lacks(tmp_path):
    from bertkit.workflows.task_text import task_text_lines

    bad = tmp_path / "train.jsonl"
    bad.write_text('{"text": "fine", "label": "a"}\n{"label": "b"}\n')
    with pytest.raises(BertkitError) as err:
        task_text_lines(str(bad))
    text = str(err.value)
    assert f"{bad}:2:" in text and "--skip-bad-lines" not in text and "--text-column" not in text
    with pytest.raises(BertkitError, match=r"cls:DATA.*classification JSONL"):
        task_text_lines("pos:x")


def test_task_text_of_a_registered_classification_set(tmp_path, monkeypatch):
    from bertkit.workflows.task_text import task_text_lines

    folder = tmp_path / "cls" / "scicite"
    folder.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (folder / f"{split}.jsonl").write_text(
            f'{{"text": "A {split} text.", "label": "a"}}\n'
            f'{{"text": "A {split} text.", "label": "b"}}\n')
    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path))
    assert task_text_lines("cls:scicite") == ["A train text."]  # train only, each text once


def test_adapt_cli_takes_task_cls_and_refuses_other_tasks_as_a_choice(tmp_path):
    from bertkit.cli import app

    res = runner.invoke(app, ["adapt", "--task", "pos", "--task-text", "task"])
    assert res.exit_code == 2 and "pos" in res.output
    from bertkit.workflows.adapt import AdaptConfig
    from bertkit.workflows.scores import task_metrics

    AdaptConfig(task="cls", data="scicite", task_text="cls:scicite").validate()
    assert task_metrics("cls")[0][0] == "macro_f1"


@pytest.mark.slow
def test_adapt_task_cls_end_to_end(tiny_encoder, tmp_path):
    import json

    from bertkit.cli import app

    data = tmp_path / "cls"
    data.mkdir()
    rows = ["Cells were grown as described .", "We compare with earlier work .",
            "Results agree with the model .", "Samples were stained as before ."]
    for split in ("train", "dev", "test"):
        (data / f"{split}.jsonl").write_text("".join(
            json.dumps({"text": t, "label": "ab"[i % 2]}) + "\n" for i, t in enumerate(rows)))
    out = tmp_path / "run"
    res = runner.invoke(app, [
        "adapt", "--task", "cls", "--model", tiny_encoder, "--data", str(data),
        "--task-text", f"cls:{data}", "--max-seq-length", "8", "--pretrain-batch-size", "2",
        "--masking", "token", "--tapt-epochs", "1", "--epochs", "1", "--batch-size", "2",
        "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stages"]["task_text"]["sentences"] == 4
    assert 0 <= summary["adapted"]["macro_f1"]["mean"] <= 100


def test_help_prints_small_defaults_one_way():
    """Every command's help writes a small default as 5e-5 / 1e-4, never 5e-05 or 0.0001."""
    import re
    from pathlib import Path

    from bertkit.cli._options import shown_default

    assert shown_default("lr", 5e-05) == "5e-5" and shown_default("warmup", 0.1) == "0.1"
    docs = "".join(p.read_text() for p in (Path(__file__).parents[2] / "docs" / "cli").glob("*.md"))
    assert re.findall(r"default: (\d\.\d*e-0\d|0\.000\d+)", docs) == []
    res = runner.invoke(__import__("bertkit.cli", fromlist=["app"]).app,
                        ["finetune", "ner", "--help"])
    assert "5e-5" in res.output and "5e-05" not in res.output


def test_recipes_name_prints_one_recipes_settings_and_vocab_compare_usage():
    from bertkit.cli import app

    res = runner.invoke(app, ["recipes", "chemprot-re-minilm"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("chemprot-re-minilm: ChemProt relation extraction")
    assert "bertkit finetune re" in lines and "  lr: 2e-4" in lines and "  pooling: cls" in lines
    res = runner.invoke(app, ["recipes", "no-such-recipe"])
    assert res.exit_code == 1 and "no recipe file or named recipe" in res.output
    usage = runner.invoke(app, ["vocab", "compare", "--help"]).output
    assert "compare [OPTIONS] VOCAB_A VOCAB_B" in usage and "{" not in usage


def test_broken_links_are_named_not_reported_as_no_train_file(tmp_path):
    from bertkit.data.sets import resolve_local
    from bertkit.tasks.driver import load_splits
    from bertkit.tasks.registry import get_task

    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "train.tsv").write_text("Aspirin\tB-Chemical\n")
    for split in ("dev", "test"):
        (folder / f"{split}.tsv").symlink_to(tmp_path / "gone" / f"{split}.tsv")
    with pytest.raises(BertkitError, match=r"dev.tsv is a broken link \(to .*gone/dev.tsv"):
        resolve_local(str(folder), "ner", (".tsv",))
    (folder / "train.tsv").unlink()
    (folder / "train.tsv").symlink_to(tmp_path / "gone" / "train.tsv")
    with pytest.raises(BertkitError, match="broken link") as err:
        load_splits(get_task("ner"), NERConfig(data=str(folder)))
    assert "no train file" not in str(err.value)


def test_ci95_of_a_score_is_clipped_to_0_1():
    from bertkit.tasks.driver import seed_statistics

    stats = seed_statistics([{"f1": 0.99, "loss": 0.9}, {"f1": 0.90, "loss": 0.2}])
    f1, loss = stats["f1"], stats["loss"]
    half = 12.7062 * (0.09 / 2 ** 0.5) / 2 ** 0.5  # t(0.975, 1) * std / sqrt(n) = 0.5718
    assert f1["ci95_high"] == 1.0  # 0.945 + 0.5718 clipped
    assert f1["ci95_low"] == pytest.approx(0.945 - half, rel=1e-4)
    assert loss["ci95_high"] > 1.0 and loss["ci95_low"] < 0.0  # a loss is not a score


@pytest.mark.parametrize("args", [
    ["evaluate", "ner", "--model", "m", "--data", "d", "--split", "tset"],
])
def test_fixed_choice_options_refuse_other_values_with_exit_2(args):
    from bertkit.cli import app

    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output


def test_pretrain_config_is_a_named_size_or_a_custom_one(tmp_path):
    # --config also takes layers=L,hidden=H (issue 27), so it is text checked with a message
    from bertkit.cli import app

    corpus = tmp_path / "c.txt"
    corpus.write_text("one sentence here\n")
    res = runner.invoke(app, ["pretrain", "--config", "huge", "--vocab", "v", "--corpus",
                              str(corpus), "-o", str(tmp_path / "run")])
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "unknown --config 'huge'" in text and "tiny, small, base, large" in text
    assert "layers=L,hidden=H" in text and not (tmp_path / "run").exists()
