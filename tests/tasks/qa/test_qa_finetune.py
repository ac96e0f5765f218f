"""finetune -> evaluate -> predict qa end to end with a tiny random BERT; the saved model in
pipeline("question-answering"); SQuAD 2.0 mode switched on (and refused when off)."""

import json
import re

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from tests.tasks.qa.conftest import CONTEXT, write_qa_dir

runner = CliRunner()


def _finetune(data, model, out, *extra):
    return runner.invoke(app, ["finetune", "qa", "--data", str(data), "--model", model,
                               "-o", str(out), "--device", "cpu", "--epochs", "1",
                               "--batch-size", "4", "--max-length", "32", "--doc-stride", "8",
                               "--max-question-length", "8", *extra])


@pytest.fixture(scope="module")
def qa_run(tmp_path_factory, tiny_encoder):
    root = tmp_path_factory.mktemp("qa-run")
    data = write_qa_dir(root / "data")
    res = _finetune(data, tiny_encoder, root / "run")
    assert res.exit_code == 0, res.output
    return root / "run", data, res.output


def test_finetune_writes_run_with_official_scores(qa_run):
    run, _, output = qa_run
    results = json.loads((run / "results.json").read_text())
    test = results["test"]
    assert results["task"] == "qa" and results["unanswerable"] is False
    assert test["total"] == 4 and test["missing"] == 0 and 0.0 <= test["f1"] <= 100.0
    assert results["windows"]["train"] > 4  # the context is windowed at 32 pieces
    lines = [json.loads(x) for x in (run / "test_predictions.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == ["q1", "q2", "q3", "q4"]
    for x in lines:  # offsets into the original context
        assert x["answer"] == "" or CONTEXT[x["start"]:x["end"]] == x["answer"]
    assert lines[1]["gold"] == ["nephrotoxicity"]
    card = (run / "model" / "README.md").read_text()
    assert "pipeline_tag: question-answering" in card and "AutoModelForQuestionAnswering" in card
    assert "official SQuAD v1.1 scorer" in output
    # the epoch line shows the dev F1 in points as the scorer gives them, not x100
    dev_f1 = [r["f1"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
              if r.get("type") == "eval"][-1]
    shown = re.search(r"dev f1 ([0-9.]+) \(best", output)
    assert shown and float(shown.group(1)) == pytest.approx(dev_f1, abs=0.006)


def test_saved_model_loads_with_plain_transformers_as_the_card_shows(qa_run):
    """transformers 5 removed pipeline("question-answering"); the card's snippet (plain
    AutoModelForQuestionAnswering + AutoTokenizer, no bertkit, no remote code) runs as written
    and its logits are bertkit's."""
    import os
    import subprocess
    import sys

    import numpy as np
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from bertkit.tasks.qa.task import CARD
    from bertkit.tasks.qa.data import QAExample
    from bertkit.tasks.qa.encoding import encode
    from bertkit.tasks.qa.task import window_logits
    from bertkit.training.devices import make_runtime

    run, _, _ = qa_run
    config = json.loads((run / "model" / "config.json").read_text())
    assert config["architectures"] == ["BertForQuestionAnswering"] and "auto_map" not in config
    snippet = CARD.usage.replace("{path}", str(run / "model")).replace("{remote}", "")
    hide = ("import sys\nclass Hide:\n    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'bertkit':\n"
            "            raise ImportError('bertkit hidden')\n"
            "sys.meta_path.insert(0, Hide())\n")
    done = subprocess.run([sys.executable, "-c", hide + snippet], capture_output=True, text=True,
                          cwd=run, env={**os.environ, "PYTHONPATH": ""}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() in "Aspirin inhibits platelet aggregation."
    model = AutoModelForQuestionAnswering.from_pretrained(run / "model").eval()
    tok = AutoTokenizer.from_pretrained(run / "model")
    ex = QAExample("q", "What does aspirin inhibit?", CONTEXT)
    enc = tok(ex.question, ex.context, return_tensors="pt")
    with torch.no_grad():
        plain = model(**enc).start_logits[0].numpy()
    ours, _ = window_logits(model, encode([ex], tok), make_runtime("cpu", "fp32"),
                            tok.pad_token_id)
    assert np.allclose(ours[0, :len(plain)], plain, atol=1e-5)


def test_evaluate_and_predict_agree_with_the_run(qa_run, tmp_path):
    run, data, _ = qa_run
    res = runner.invoke(app, ["evaluate", "qa", "-m", str(run), "--data", str(data),
                              "--device", "cpu", "--output", str(tmp_path / "m.json"),
                              "--predictions", str(tmp_path / "p.jsonl")])
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "m.json").read_text())
    results = json.loads((run / "results.json").read_text())
    assert metrics["f1"] == pytest.approx(results["test"]["f1"], abs=1e-6)
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"id": "x1", "question": "When was the trial?",
                               "context": CONTEXT}) + "\n")
    res = runner.invoke(app, ["predict", "qa", "-m", str(run), "-i", str(inp),
                              "-o", str(tmp_path / "out.jsonl"), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    (rec,) = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert rec["id"] == "x1" and set(rec) == {"id", "answer", "start", "end", "score"}
    assert CONTEXT[rec["start"]:rec["end"]] == rec["answer"]


def test_two_stage_route_accepts_an_earlier_qa_run(qa_run, tmp_path):
    run, data, _ = qa_run
    res = _finetune(data, str(run), tmp_path / "stage2", "--max-train-samples", "2")
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "stage2" / "results.json").read_text())
    assert results["model"].endswith("model")


def test_unanswerable_data_switches_v2_on_or_is_refused(tmp_path, tiny_encoder):
    data = write_qa_dir(tmp_path / "v2", unanswerable=True)
    res = _finetune(data, tiny_encoder, tmp_path / "off", "--unanswerable", "off")
    assert res.exit_code == 1 and "Traceback" not in res.output
    text = " ".join(res.output.split())
    assert "article 'Drugs', question 'q5': unanswerable question" in text
    assert not (tmp_path / "off").exists()
    res = _finetune(data, tiny_encoder, tmp_path / "auto")
    assert res.exit_code == 0, res.output
    assert "SQuAD 2.0 mode on" in " ".join(res.output.split())
    test = json.loads((tmp_path / "auto" / "results.json").read_text())["test"]
    assert test["NoAns_total"] == 1 and test["HasAns_total"] == 4
    assert "best_f1_thresh" in test and "f1_at_dev_thresh" in test


def test_v2_dev_threshold_pass_is_left_out_of_the_timed_prediction(tmp_path, tiny_encoder,
                                                                    monkeypatch):
    """SQuAD 2.0: the dev pass that chooses the no-answer threshold runs before the test pass
    is timed (predict_seconds times the test questions only, as Trainer.predict does)."""
    import time as real_time

    import bertkit.tasks.driver as driver
    import bertkit.tasks.qa.answer as qa_answer

    events = []
    window_logits = qa_answer.window_logits

    def logged(model, features, *args, **kwargs):
        events.append(("pass", len(features)))
        return window_logits(model, features, *args, **kwargs)

    class Clock:
        @staticmethod
        def perf_counter():
            events.append(("clock", 0))
            return real_time.perf_counter()

    monkeypatch.setattr(qa_answer, "window_logits", logged)
    monkeypatch.setattr(driver, "time", Clock)
    data = write_qa_dir(tmp_path / "v2", unanswerable=True)
    res = _finetune(data, tiny_encoder, tmp_path / "run")
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    start, end = [i for i, e in enumerate(events) if e[0] == "clock"][-2:]
    timed = [e for e in events[start:end] if e[0] == "pass"]
    assert len(timed) == 1  # the test split alone
    assert events[start - 1] == ("pass", results["windows"]["dev"])  # the threshold's dev pass
    assert "f1_at_dev_thresh" in results["test"]


def test_bad_answer_start_exits_1_naming_file_article_and_question(tmp_path, tiny_encoder):
    from tests.tasks.qa.conftest import squad_doc

    doc = squad_doc()
    doc["data"][0]["paragraphs"][0]["qas"][2]["answers"][0]["answer_start"] = 5
    data = write_qa_dir(tmp_path / "bad", doc=doc)
    res = _finetune(data, tiny_encoder, tmp_path / "run")
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "article 'Drugs', question 'q3'" in text
    assert "train.json" in text and not (tmp_path / "run").exists()


def test_predict_answers_input_whose_optional_gold_answer_is_bad(qa_run, tmp_path):
    # predictions need no gold answers: a bad one is named in a warning, never a refusal
    run, _, _ = qa_run
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"id": "x1", "question": "When was the trial?", "context": CONTEXT,
                               "answers": {"text": ["1998"], "answer_start": [3]}}) + "\n"
                   + json.dumps({"id": "x2", "question": "What does aspirin inhibit?",
                                 "context": CONTEXT}) + "\n")
    res = runner.invoke(app, ["predict", "qa", "-m", str(run), "-i", str(inp),
                              "-o", str(tmp_path / "out.jsonl"), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    # on the command's console, like every other warning, not as a Python warning
    flat = " ".join(res.output.split())
    assert "warning:" in flat and "in.jsonl:1: question 'x1': answer_start 3" in flat, res.output
    recs = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in recs] == ["x1", "x2"]
    assert all(CONTEXT[r["start"]:r["end"]] == r["answer"] for r in recs)


@pytest.mark.parametrize("rate", ["0", "1.5"])
def test_null_window_rate_out_of_range_exits_2_or_1_naming_it(tmp_path, tiny_encoder, rate):
    data = write_qa_dir(tmp_path / "d")
    res = _finetune(data, tiny_encoder, tmp_path / "run", "--null-window-rate", rate)
    assert res.exit_code in (1, 2) and "Traceback" not in res.output
    assert "null-window-rate" in res.output or "null_window_rate" in res.output
    assert not (tmp_path / "run").exists()


def test_null_window_rate_trains_on_fewer_windows_and_says_so(tmp_path, tiny_encoder):
    long_context = " ".join(f"filler{i}" for i in range(60)) + " " + CONTEXT
    doc = {"version": "1.1", "data": [{"title": "Long", "paragraphs": [{"context": long_context,
           "qas": [{"id": "a", "question": "When was the trial?",
                    "answers": [{"text": "1998", "answer_start": long_context.index("1998")}]}]
           }]}]}
    data = write_qa_dir(tmp_path / "d", doc)
    res = _finetune(data, tiny_encoder, tmp_path / "run", "--null-window-rate", "0.01")
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    windows = results["windows"]
    assert windows["train_null_answerable"] >= 3 and windows["train"] > 4
    assert (f"null windows of answerable questions: {windows['train_null_answerable']} of "
            f"{windows['train']}") in text
    assert f"epoch 1 trains {windows['sampled_per_epoch'][0]} windows" in text
    assert results["steps"] == 1  # the answer windows only: one batch of 4 (all: 2 or more)
