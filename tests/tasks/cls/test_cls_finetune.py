import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from tests.tasks.cls.conftest import TEXTS, write_cls_dir

runner = CliRunner()
FAST = ["--epochs", "1", "--batch-size", "2", "--lr", "1e-3", "--device", "cpu"]


def test_finetune_evaluate_predict_and_plain_transformers(tmp_path, tiny_encoder):
    d = write_cls_dir(tmp_path / "d")
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(run), "--max-length", "12", *FAST])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    test = results["test"]
    assert results["task"] == "cls" and results["labels"] == ["Background", "CompareOrContrast",
                                                               "Uses"]
    assert test["support"] == 6 and test["micro_f1"] == pytest.approx(test["accuracy"])
    assert set(test["baseline"]) >= {"majority_label", "baseline_macro_f1", "single_label"}
    # every text is over 12 pieces: all shortened, and said so
    assert results["shortened_texts"] == {"train": 6, "dev": 6, "test": 6}
    assert "kept head+tail: 6 train" in " ".join(res.output.split())
    for f in ("test_confusion.csv", "test_confusion.png", "test_predictions.jsonl",
              "model/config.json", "model/bertkit.json"):
        assert (run / f).is_file(), f
    # a plain AutoModelForSequenceClassification, and the text-classification pipeline
    from transformers import AutoModelForSequenceClassification, pipeline

    m = AutoModelForSequenceClassification.from_pretrained(run / "model")
    assert m.config.id2label[2] == "Uses"
    clf = pipeline("text-classification", model=str(run / "model"), device="cpu")
    out = clf(TEXTS[0][0])
    assert out[0]["label"] in results["labels"]
    preds = [json.loads(x) for x in (run / "test_predictions.jsonl").read_text().splitlines()]
    # the pipeline (no head-tail cut: model max length 512) on a text within 12 pieces agrees
    res = runner.invoke(app, ["evaluate", "cls", "-m", str(run), "--data", str(d), "--split",
                              "test", "--output", str(tmp_path / "m.json"), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "m.json").read_text())["macro_f1"] == \
        pytest.approx(test["macro_f1"])
    row = [line for line in res.output.splitlines() if "baseline (all " in line]
    assert len(row) == 1 and "acc " in row[0], res.output  # one unwrapped row at 80 columns
    res = runner.invoke(app, ["predict", "cls", "-m", str(run), "-i", str(d / "test.jsonl"),
                              "--device", "cpu"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.output.splitlines() if x.startswith("{")]
    assert [x["predicted"] for x in lines] == [p["predicted"] for p in preds]


def test_csv_columns_class_weights_windows(tmp_path, tiny_encoder):
    d = write_cls_dir(tmp_path / "d", ext="tsv")
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(run), "--text-column", "sentence", "--label-column",
                              "intent", "--class-weights", "balanced", "--long-text", "windows",
                              "--max-length", "10", *FAST])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    assert results["class_weights"] == "balanced" and results["long_text"] == "windows"
    assert results["test"]["support"] == 6  # one prediction per text, not per window


def _finetune_multi_label(tmp_path, encoder):
    """``finetune cls --multi-label`` on TEXTS, every other text also labelled Cites; the run
    directory."""
    d = tmp_path / "ml"
    d.mkdir()
    rows = [{"text": t, "label": [lab] + (["Cites"] if i % 2 else [])}
            for i, (t, lab) in enumerate(TEXTS)]
    for split in ("train", "dev", "test"):
        (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", encoder,
                              "-o", str(run), "--multi-label", *FAST])
    assert res.exit_code == 0, res.output
    return run


def test_multi_label_thresholds_saved(tmp_path, tiny_encoder):
    run = _finetune_multi_label(tmp_path, tiny_encoder)
    meta = json.loads((run / "model" / "bertkit.json").read_text())
    assert meta["multi_label"] and len(meta["thresholds"]) == 4
    assert all(0 < t < 1 for t in meta["thresholds"])
    first = json.loads((run / "test_predictions.jsonl").read_text().splitlines()[0])
    assert isinstance(first["predicted"], list) and set(first["probabilities"]) == \
        {"Background", "Cites", "CompareOrContrast", "Uses"}


def test_bad_input_exits_1_with_file_and_line(tmp_path, tiny_encoder):
    d = write_cls_dir(tmp_path / "d", dev=TEXTS + [("A new idea .", "Future")])
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(tmp_path / "r"), *FAST])
    assert res.exit_code == 1
    assert f"{d / 'dev.jsonl'}:7: label 'Future' in dev" in " ".join(res.output.split())
    assert not (tmp_path / "r").exists()  # refused before anything was written
    (d / "dev.jsonl").write_text('{"text": "x", "label": "Uses"}\n{"text": oops}\n')
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(tmp_path / "r"), *FAST])
    assert res.exit_code == 1 and "dev.jsonl:2: not JSON" in " ".join(res.output.split())
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "--long-text", "middle",
                              "-o", str(tmp_path / "r"), *FAST])
    assert res.exit_code == 2 and "'middle' is not one of 'head-tail', 'windows'" in " ".join(
        res.output.replace("│", " ").split())  # the command line refuses it (a Choice option)


def test_multi_label_thresholds_are_chosen_on_dev_before_the_timed_test(tmp_path, tiny_encoder,
                                                                        monkeypatch):
    # issue 46: the dev pass that chooses the thresholds is a step of its own (TaskRun
    # .choose_on_dev), run by the driver before test is timed, as QA's no-answer threshold
    import time

    import bertkit.tasks.cls.scoring as cls_scoring  # the run's scorer chooses the thresholds

    real = cls_scoring.best_thresholds

    def slow(*args, **kwargs):
        time.sleep(1.5)  # a dev pass far slower than scoring six test texts
        return real(*args, **kwargs)

    monkeypatch.setattr(cls_scoring, "best_thresholds", slow)
    run = _finetune_multi_label(tmp_path, tiny_encoder)
    results = json.loads((run / "results.json").read_text())
    assert results["predict_seconds"] < 1.5  # the threshold pass is not in the timed test
    chosen = results["chosen_on_dev"]["thresholds"]
    assert results["test"]["thresholds"] == chosen
    assert json.loads((run / "model" / "bertkit.json").read_text())["thresholds"] == chosen


def test_evaluate_max_eval_samples_scores_the_first_n(tmp_path, tiny_encoder):
    # issue 46: evaluate takes --max-eval-samples like finetune (every task: see the surface test)
    d = write_cls_dir(tmp_path / "d")
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(run), "--max-length", "16", *FAST])
    assert res.exit_code == 0, res.output
    out = tmp_path / "m.json"
    res = runner.invoke(app, ["evaluate", "cls", "-m", str(run), "--data", str(d),
                              "--max-eval-samples", "4", "--device", "cpu", "--output", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["support"] == 4  # of the 6 test texts


def test_every_evaluate_command_takes_max_eval_samples():
    import typer

    from bertkit.tasks.registry import task_names

    group = typer.main.get_command(app).commands["evaluate"]
    for name in task_names():
        params = {p.name: p for p in group.commands[name].params}
        assert "--max-eval-samples" in params["max_eval_samples"].opts, name


def test_hoc_metric_picks_the_epoch_and_is_shown_on_console_and_card(tmp_path, tiny_encoder):
    """Helper trial: a HoC run chose its epoch by macro-F1 and showed BLURB's HoC score nowhere
    but results.json. ``--metric hoc_f1`` (auto for the registered ``hoc``) selects by it; the
    console table and the card show it; single-label runs keep macro-F1 and no HoC column."""
    d = tmp_path / "ml"
    d.mkdir()
    rows = [{"id": f"{100 + i}", "text": t, "label": [lab] + (["Cites"] if i % 2 else [])}
            for i, (t, lab) in enumerate(TEXTS)]
    for split in ("train", "dev", "test"):
        (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(run), "--multi-label", "--metric", "hoc_f1", *FAST],
                        env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    assert results["select_metric"] == "hoc_f1" and results["test"]["hoc_documents"] == 6
    test = results["test"]
    shown = f"{100 * test['hoc_precision']:.2f}"
    line = next(x for x in res.output.splitlines() if "HoC (BLURB)" in x)
    assert shown in line and f"{100 * test['hoc_f1']:.2f}" in line and "6 docs" in line
    card = (run / "model" / "README.md").read_text()
    assert "| HoC F1 (BLURB: micro-F1 over documents x labels) |" in card
    assert "chosen on dev by `hoc_f1`" in card and f"{100 * test['hoc_f1']:.2f}" in card

    from bertkit.tasks.cls.config import CLSConfig

    assert CLSConfig(data="hoc").select_metric() == "hoc_f1"
    assert CLSConfig(data="pubmedqa").select_metric() == "accuracy"
    assert CLSConfig(data="scicite").select_metric() == "macro_f1"
    assert CLSConfig(data="hoc", metric="macro_f1").select_metric() == "macro_f1"
    # review: a local folder named like the set (./hoc) is read as HoC by its name, and its
    # metric too, although the driver records its absolute path (resolved before that)
    import os

    (tmp_path / "cwd" / "hoc").mkdir(parents=True)
    here = os.getcwd()
    os.chdir(tmp_path / "cwd")
    try:
        from bertkit.data.sets import canonical_data

        cfg = CLSConfig(data="hoc")
        cfg.resolve_registered()
        cfg.data = canonical_data(cfg.data)
        assert cfg.data.endswith("/cwd/hoc") and cfg.multi_label
        assert cfg.select_metric() == cfg.metric == "hoc_f1"
    finally:
        os.chdir(here)
    single = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder, "-o",
                                 str(tmp_path / "r2"), "--metric", "hoc_f1", *FAST])
    assert single.exit_code != 0 and "hoc_f1 needs --multi-label" in " ".join(single.output.split())


def test_a_capped_eval_split_that_loses_labels_is_warned_about(tmp_path, tiny_encoder):
    """Helper trial: ``--max-eval-samples`` keeps the first N of a label-sorted file (PubMedQA's
    test opens with 50 'yes'): the run must say the capped split lost labels."""
    rows = sorted(TEXTS, key=lambda r: r[1])  # Background, Background, Compare..., Uses, Uses
    d = write_cls_dir(tmp_path / "d", train=TEXTS, dev=TEXTS, test=rows)
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder, "-o",
                              str(tmp_path / "run"), "--max-eval-samples", "2", *FAST],
                        env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert ("--max-eval-samples 2 keeps the first 2 of 6 test texts: 1 of the file's 3 labels "
            "(missing: CompareOrContrast, Uses)") in text
    assert "every gold label of this split is 'Background' (2 examples)" in text
    assert ("keeps the first 2 of 6 dev texts: 2 of the file's 3 labels (missing: "
            "CompareOrContrast)") in text  # dev's first two: Uses, Background


def test_a_one_label_dev_split_is_noted_once_not_at_every_epoch(tmp_path, tiny_encoder):
    """Helper trial: a dev split with one gold label printed its "scores say little" note at
    every dev epoch; it is a property of the split, said once a run."""
    rows = sorted(TEXTS, key=lambda r: r[1])
    d = write_cls_dir(tmp_path / "d", train=TEXTS, dev=rows, test=TEXTS)
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder, "-o",
                              str(tmp_path / "run"), "--max-eval-samples", "2", *FAST[2:],
                              "--epochs", "3"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert text.count("dev: every gold label of this split is 'Background' (2 examples)") == 1
    assert len([r for r in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
                if '"split": "dev"' in r]) == 3
