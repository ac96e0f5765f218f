"""Review fixes: --seeds from a recipe as a list or an int, the --seeds summary naming the metric
the run chose, evaluate --split dev after --split-from-dev, and the shared evaluate body writing
the same prediction and confusion files as a run's test split (re, cls single- and multi-label)."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.config import build_config
from bertkit.errors import BertkitError
from bertkit.recipes import run_settings
from bertkit.tasks.ner import NERConfig

runner = CliRunner()


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


def _fake_run(root, split_from_dev):
    (root / "model").mkdir(parents=True)
    (root / "results.json").write_text(json.dumps({"task": "ner", "split_from_dev": split_from_dev}))
    return root


HELD = {"fraction": 0.1, "source": "/data/x/dev.txt", "train": 90, "dev": 10, "automatic": False}


def test_held_out_note_warns_that_the_whole_dev_file_is_scored(tmp_path):
    from rich.console import Console

    from bertkit.cli.evaluate import held_out_note

    run = _fake_run(tmp_path / "run", HELD)
    console = Console(record=True, width=200)
    for model in (run, run / "model"):  # the run directory or its model/ folder
        warning = held_out_note("ner", str(model), "dev", console)
        assert "/data/x/dev.txt" in warning and "90 trained on, 10 held out" in warning
        assert f'"dev" in {run / "results.json"}' in warning
    assert "warning:" in console.export_text()
    assert held_out_note("ner", str(run), "test", None) is None  # test is never trained on
    plain = _fake_run(tmp_path / "plain", None)
    assert held_out_note("ner", str(plain), "dev", None) is None
    # a parser of a set without a train file: evaluate dep scores the held-out tenth itself
    genia = _fake_run(tmp_path / "genia", {**HELD, "automatic": True})
    assert held_out_note("dep", str(genia), "dev", None) is None
    assert held_out_note("ner", str(genia), "dev", None) is not None


def test_evaluate_dev_after_split_from_dev_warns(tmp_path, ner_dir, tiny_encoder):
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder,
                              "-o", str(run), "--device", "cpu", "--epochs", "1",
                              "--batch-size", "2", "--split-from-dev", "0.5"])
    assert res.exit_code == 0, res.output
    held = json.loads((run / "results.json").read_text())["split_from_dev"]
    assert held["fraction"] == 0.5 and held["dev"] >= 1
    res = runner.invoke(app, ["evaluate", "ner", "-m", str(run), "--data", str(ner_dir),
                              "--split", "dev", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "warning:" in text and "the dev split scored here is the whole file" in text
    res = runner.invoke(app, ["evaluate", "ner", "-m", str(run), "--data", str(ner_dir),
                              "--split", "test", "--device", "cpu"])
    assert res.exit_code == 0 and "whole file" not in res.output


@pytest.mark.parametrize("multi_label", [False, True])
def test_evaluate_cls_writes_the_files_finetune_wrote(tmp_path, tiny_encoder, multi_label):
    """evaluate's shared body writes the same prediction lines and confusion matrix as the run's
    test files (same model, same test split); a multi-label model has no confusion matrix."""
    from tests.tasks.cls.conftest import TEXTS, write_cls_dir

    d = write_cls_dir(tmp_path / "d")
    if multi_label:
        rows = [{"text": t, "label": [lab] + (["Cites"] if i % 2 else [])}
                for i, (t, lab) in enumerate(TEXTS)]
        for split in ("train", "dev", "test"):
            (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder, "-o",
                              str(run), "--epochs", "1", "--batch-size", "2", "--device", "cpu"]
                        + (["--multi-label"] if multi_label else []))
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["evaluate", "cls", "-m", str(run), "--data", str(d), "--split",
                              "test", "--device", "cpu", "--predictions", str(tmp_path / "p.jsonl"),
                              "--confusion", str(tmp_path / "cm")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p.jsonl").read_text() == (run / "test_predictions.jsonl").read_text()
    if multi_label:
        assert not (tmp_path / "cm.csv").exists() and not (run / "test_confusion.csv").exists()
    else:
        assert (tmp_path / "cm.csv").read_text() == (run / "test_confusion.csv").read_text()
        assert (tmp_path / "cm.png").read_bytes()[:4] == b"\x89PNG"


def test_evaluate_re_writes_the_files_finetune_wrote(tmp_path, tiny_encoder):
    from tests.tasks.re.conftest import write_re_dir

    d = write_re_dir(tmp_path / "d")
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "re", "--data", str(d), "--model", tiny_encoder, "-o",
                              str(run), "--epochs", "1", "--batch-size", "4", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["evaluate", "re", "-m", str(run), "--data", str(d), "--split",
                              "test", "--device", "cpu", "--predictions", str(tmp_path / "p.jsonl"),
                              "--confusion", str(tmp_path / "cm")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p.jsonl").read_text() == (run / "test_predictions.jsonl").read_text()
    assert (tmp_path / "cm.csv").read_text() == (run / "test_confusion.csv").read_text()
