"""``--split-from-dev`` with ``--max-*-samples``: the note, the printed summary and
``results.json`` give the counts actually trained on and selected by, the split's own sizes
under ``split_train``/``split_dev`` (every task goes through the driver's ``load_splits``); and
``evaluate --split dev`` of such a run warns that the whole dev file is scored."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.tasks.driver import load_splits
from bertkit.tasks.registry import get_task
from tests.conftest import write_ner_dir
from tests.tasks.cls.conftest import TEXTS, write_cls_dir

runner = CliRunner()


def sentences(n: int) -> str:
    return "\n".join(f"Aspirin{k}\tB-Chemical\ninduced\tO\n.\tO\n" for k in range(n))


@pytest.mark.parametrize("task_name,write,n", [
    ("ner", lambda root: write_ner_dir(root, dev=sentences(70)), 70),
    ("cls", lambda root: write_cls_dir(root, dev=TEXTS * 12), 72),
])
def test_load_splits_records_the_limited_counts(tmp_path, task_name, write, n):
    task = get_task(task_name)
    data_dir = write(tmp_path / "d")
    (data_dir / next(p.name for p in data_dir.iterdir() if p.stem == "train")).unlink()
    cfg = task.config_class(data=str(data_dir), split_from_dev=0.1, max_train_samples=50,
                            max_eval_samples=5)
    data = load_splits(task, cfg)
    split = data.info["split_from_dev"]
    held = n // 10
    assert (split["train"], split["dev"]) == (50, 5)
    assert (split["split_train"], split["split_dev"]) == (n - held, held)
    assert (len(data.splits["train"]), len(data.splits["dev"])) == (50, 5)
    assert f"first 50 of {n - held}, --max-train-samples 50" in data.note
    assert f"(dev, first 5 of {held}, --max-eval-samples 5)" in data.note
    # without limits the two agree and the note gives plain counts
    cfg = task.config_class(data=str(data_dir), split_from_dev=0.1)
    data = load_splits(task, cfg)
    split = data.info["split_from_dev"]
    assert (split["train"], split["dev"], split["split_train"], split["split_dev"]) == \
        (n - held, held, n - held, held)
    assert f"({n - held}), held out for model selection (dev, {held})" in data.note


def test_finetune_prints_and_records_the_count_trained_on(tmp_path, tiny_encoder):
    data = write_ner_dir(tmp_path / "d", dev=sentences(70))
    (data / "train.tsv").unlink()
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "ner", "--data", str(data), "--model", tiny_encoder,
                              "-o", str(run), "--device", "cpu", "--epochs", "1",
                              "--batch-size", "16", "--split-from-dev", "0.1",
                              "--max-train-samples", "50"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "data: 50/7/3 sentences" in text
    assert "less every 10th sentence (first 50 of 63, --max-train-samples 50)" in text
    assert "note: trained on 50 examples of" in text and "7 held out as dev" in text
    split = json.loads((run / "results.json").read_text())["split_from_dev"]
    assert (split["train"], split["dev"], split["split_train"], split["split_dev"]) == \
        (50, 7, 63, 7)


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


def test_held_out_note_for_a_parser_of_a_set_without_a_train_file(tmp_path):
    from bertkit.cli.evaluate import held_out_note
    from tests.tasks.dep.conftest import write_dep_dir

    no_train = write_dep_dir(tmp_path / "no-train", train=None)
    with_train = write_dep_dir(tmp_path / "with-train")
    tenth = _fake_run(tmp_path / "tenth", {**HELD, "split_train": 90, "split_dev": 10})
    # evaluate dep scores every 10th dev sentence itself: the held-out part of a 0.1 split
    assert held_out_note("dep", str(tenth), "dev", None, str(no_train)) is None
    assert "whole file" in held_out_note("dep", str(tenth), "dev", None, str(with_train))
    twentieth = _fake_run(tmp_path / "twentieth", {**HELD, "fraction": 0.05})
    warning = held_out_note("dep", str(twentieth), "dev", None, str(no_train))
    assert "every 10th sentence" in warning and "fraction 0.05" in warning
