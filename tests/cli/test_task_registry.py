"""The task registry feeds the CLI and recipes; no task imports another; lengths beyond the
encoder's positions are refused before anything is written (issue 17 item 1)."""

import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.workflows import recipes
from bertkit.cli import app
from bertkit.tasks.base import Task
from bertkit.tasks.registry import TASKS, get_task, load_attr, task_names

runner = CliRunner()
TASKS_DIR = Path(__file__).resolve().parents[2] / "bertkit" / "tasks"
SHARED = {"base", "common", "driver", "registry", "finetune_config", "suite_metrics",
          "saved_settings"}


def _commands(group: str) -> set[str]:
    import typer.main

    click_group = typer.main.get_command(app).commands[group]
    return set(click_group.commands)


@pytest.mark.parametrize("name", task_names())
def test_every_registered_task_reachable_from_cli_and_recipes(name):
    task = get_task(name)
    assert isinstance(task, Task) and task.name == name
    for group in ("finetune", "evaluate", "predict"):
        assert name in _commands(group), f"bertkit {group} {name} is missing"
    cls_spec, fn_spec = recipes.COMMANDS[f"finetune {name}"]
    assert load_attr(cls_spec) is task.config_class
    assert callable(load_attr(fn_spec))
    assert callable(task.evaluate) and callable(task.predict)


def test_registry_lists_the_three_original_tasks():
    assert {"ner", "re", "dep"} <= set(TASKS)


def test_no_task_imports_another():
    packages = {p.name for p in TASKS_DIR.iterdir() if p.is_dir() and not p.name.startswith("_")}
    found = []
    for pkg in packages:
        for file in (TASKS_DIR / pkg).glob("*.py"):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [a.name for a in node.names] if isinstance(node, ast.Import) else []
                for mod in names:
                    parts = mod.split(".")
                    if parts[:2] == ["bertkit", "tasks"] and len(parts) > 2 \
                            and parts[2] not in SHARED and parts[2] != pkg:
                        found.append(f"{file.relative_to(TASKS_DIR)} imports {mod}")
    assert found == []


@pytest.mark.parametrize("task", task_names())
def test_max_length_beyond_positions_refused_before_any_output(tmp_path, ner_dir, tiny_encoder,
                                                               task):
    out = tmp_path / "run"
    res = runner.invoke(app, ["finetune", task, "--data", str(ner_dir), "--model", tiny_encoder,
                              "--max-length", "1024", "-o", str(out), "--device", "cpu"])
    assert res.exit_code == 1
    assert "--max-length 1024 exceeds the model's 512 positions (expected at most 512)" \
        in " ".join(res.output.split())
    assert "Traceback" not in res.output and not out.exists()


def test_max_length_from_a_recipe_refused_too(tmp_path, ner_dir, tiny_encoder):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"description: too long\ncommand: finetune ner\nsettings: {{data: {ner_dir},"
                      f" model: {tiny_encoder}, max_length: 600, device: cpu}}\n")
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", str(recipe), "-o", str(out)])
    assert res.exit_code == 1, res.output
    assert "--max-length 600 exceeds the model's 512 positions" in " ".join(res.output.split())
    assert not (out / "config.yaml").exists() and not (out / "model").exists()


def test_position_limit_of_a_roberta_config_leaves_out_the_padding_offset():
    from transformers import BertConfig, RobertaConfig

    from bertkit.inputs.lengths import position_limit

    assert position_limit(RobertaConfig(max_position_embeddings=514, pad_token_id=1)) == 512
    assert position_limit(BertConfig(max_position_embeddings=128)) == 128


def test_saved_length_larger_than_positions_is_clamped_with_a_warning():
    from rich.console import Console

    from bertkit.inputs.lengths import fit_length

    console = Console(record=True, width=200)
    assert fit_length(1024, 512, console) == 512
    assert "max_length 1024 exceeds the model's 512 positions; using 512" in console.export_text()
    assert fit_length(256, 512, console) == 256


def test_split_from_dev_needed_for_a_directory_without_train(tmp_path, ner_dir, tiny_encoder):
    (ner_dir / "train.tsv").unlink()
    res = runner.invoke(app, ["finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder,
                              "-o", str(tmp_path / "a"), "--device", "cpu"])
    assert res.exit_code == 1 and "--split-from-dev 0.1" in " ".join(res.output.split())
    assert not (tmp_path / "a").exists()
    # dev has 3 sentences: with 0.5, sentence 1 (0-based) is held out, 0 and 2 train
    res = runner.invoke(app, ["finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder,
                              "-o", str(tmp_path / "b"), "--device", "cpu", "--epochs", "1",
                              "--split-from-dev", "0.5", "--batch-size", "2"])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "b" / "results.json").read_text())
    split = results["split_from_dev"]
    assert (split["fraction"], split["train"], split["dev"], split["automatic"]) == \
        (0.5, 2, 1, False)
    assert split["source"].endswith("dev.tsv")
    assert "held out as dev (--split-from-dev 0.5)" in " ".join(res.output.split())


def test_split_from_dev_out_of_range_is_named(tmp_path, ner_dir):
    res = runner.invoke(app, ["finetune", "ner", "--data", str(ner_dir), "--split-from-dev", "1.5",
                              "-o", str(tmp_path / "a")])
    assert res.exit_code == 1 and "--split-from-dev is 1.5" in res.output
    assert not (tmp_path / "a").exists()


def test_seeds_run_in_sub_folders_with_a_summary(tmp_path, ner_dir, tiny_encoder):
    out = tmp_path / "seeds"
    args = ["finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder, "-o", str(out),
            "--device", "cpu", "--epochs", "1", "--batch-size", "2", "--seeds", "1,2"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    runs = [json.loads((out / f"seed-{s}" / "results.json").read_text()) for s in (1, 2)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"] == [1, 2] and summary["select_metric"] == "f1"
    f1 = summary["metrics"]["test"]["f1"]
    values = [r["test"]["f1"] for r in runs]
    assert f1["values"] == values and f1["mean"] == pytest.approx(sum(values) / 2)
    # n = 2: t(0.975, 1) = 12.706; std = |a - b| / sqrt(2)
    std = abs(values[0] - values[1]) / 2 ** 0.5
    assert f1["std"] == pytest.approx(std)
    assert f1["ci95_high"] - f1["mean"] == pytest.approx(12.7062 * std / 2 ** 0.5, rel=1e-4)
    for s in (1, 2):
        assert f"seed: {s}" in (out / f"seed-{s}" / "config.yaml").read_text()
    assert "95% interval" in res.output and "summary.json" in "".join(res.output.split())
    again = runner.invoke(app, args)  # the seed folders hold runs: refused before training
    assert again.exit_code == 1 and "already holds a run" in again.output
    resumed = runner.invoke(app, args + ["--resume"])  # finished seeds are kept
    assert resumed.exit_code == 0 and "finished earlier, kept" in resumed.output


def test_bad_seeds_refused(tmp_path, ner_dir):
    res = runner.invoke(app, ["finetune", "ner", "--data", str(ner_dir), "--seeds", "1,x",
                              "-o", str(tmp_path / "a")])
    assert res.exit_code == 1 and "--seeds is '1,x'" in res.output


def test_seed_statistics_real_values():
    from scipy import stats

    from bertkit.tasks.driver import seed_statistics

    recs = [{"f1": 0.80, "epoch": 2}, {"f1": 0.83, "epoch": 1}, {"f1": 0.86, "epoch": 3}]
    s = seed_statistics(recs)
    assert set(s) == {"f1"}
    assert s["f1"]["mean"] == pytest.approx(0.83) and s["f1"]["std"] == pytest.approx(0.03)
    half = stats.t.ppf(0.975, 2) * 0.03 / 3 ** 0.5  # 4.3027 * 0.03 / 1.732 = 0.07452
    assert s["f1"]["ci95_low"] == pytest.approx(0.83 - half) and half == pytest.approx(0.07452,
                                                                                         rel=1e-3)
    one = seed_statistics([{"f1": 0.5}])["f1"]
    assert one["std"] is None and one["ci95_low"] is None


def test_split_from_dev_every_kth():
    from bertkit.tasks.driver import split_from_dev

    train, held = split_from_dev(list(range(25)), 0.1)
    assert held == [9, 19] and len(train) == 23
    train, held = split_from_dev(list(range(6)), 1 / 3)
    assert held == [2, 5]


def test_pretrain_uses_the_same_length_check(tmp_path, tiny_encoder):
    corpus = tmp_path / "c.txt"
    corpus.write_text("Aspirin induced renal failure .\nCisplatin causes nephrotoxicity .\n" * 200)
    out = tmp_path / "pre"
    res = runner.invoke(app, ["pretrain", "--corpus", str(corpus), "--model", tiny_encoder,
                              "--max-seq-length", "1024", "--max-steps", "1", "-o", str(out),
                              "--device", "cpu", "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 1, res.output
    assert "--max-seq-length 1024 exceeds the model's 512 positions (expected at most 512)" \
        in " ".join(res.output.split())
    assert not (out / "config.yaml").exists()


def test_seeds_resume_restarts_a_seed_without_checkpoint_and_names_the_root(
        tmp_path, ner_dir, tiny_encoder, monkeypatch):
    from bertkit.tasks import driver
    from bertkit.training.rundir import RunStopped

    out = tmp_path / "seeds"
    args = ["finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder, "-o", str(out),
            "--device", "cpu", "--epochs", "1", "--batch-size", "2", "--seeds", "1,2"]
    one = driver._finetune_one

    def stop_seed_2(task, sub, console=None):
        if sub.seed == 2:  # as a signal after seed 2's checkpoint at step 3 would
            raise RunStopped("SIGTERM", 3, Path(sub.output_dir) / "checkpoints",
                             Path(sub.output_dir))
        return one(task, sub, console)

    monkeypatch.setattr(driver, "_finetune_one", stop_seed_2)
    res = runner.invoke(app, args)
    assert res.exit_code == 143
    text = " ".join(res.output.split())
    assert f"--resume --output-dir {out} (finished seeds are kept)" in text
    assert f"--output-dir {out}/seed-2" not in text
    monkeypatch.setattr(driver, "_finetune_one", one)
    # seed 2 stopped before its first checkpoint (a partial metrics.jsonl, no checkpoints/):
    # --resume starts it again instead of failing with "no checkpoint"
    (out / "seed-2").mkdir()
    (out / "seed-2" / "metrics.jsonl").write_text('{"step": 1, "loss": 9.0}\n')
    res = runner.invoke(app, args + ["--resume"])
    assert res.exit_code == 0, res.output
    assert "finished earlier, kept" in res.output
    lines = (out / "seed-2" / "metrics.jsonl").read_text().splitlines()
    assert '{"step": 1, "loss": 9.0}' not in lines and (out / "summary.json").is_file()


def test_seeds_summary_names_the_metric_the_run_selected_by(tmp_path, ner_dir, tiny_encoder):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("seeds: [1]\nepochs: 1\nbatch_size: 2\n")
    out = tmp_path / "seeds"
    res = runner.invoke(app, ["finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder,
                              "-o", str(out), "--device", "cpu", "--metric", "token-macro",
                              "--recipe", str(recipe)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"] == [1]
    assert summary["select_metric"] == "token_macro_f1"  # not NER's default, f1
    run = json.loads((out / "seed-1" / "results.json").read_text())
    assert run["select_metric"] == "token_macro_f1"
    assert "selected by dev token_macro_f1" in " ".join(res.output.split())
