"""finetune/evaluate/predict sim: sentence-pair regression, saved as a plain regression model."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.metrics.sim import similarity_scores
from bertkit.tasks.sim.data import read_pairs
from tests.tasks.sim.conftest import PAIRS, write_sim_dir

runner = CliRunner()
# fp32 everywhere: the card's plain-transformers snippet runs in fp32, and --precision auto is
# bf16 on a CPU with AMX-BF16 (predictions then differ in the 4th decimal)
FAST = ["--epochs", "2", "--batch-size", "4", "--lr", "1e-3", "--device", "cpu",
        "--precision", "fp32"]
def test_similarity_scores_against_numpy():
    import numpy as np

    g, p = [0.2, 1.5, 2.0, 3.7, 4.0], [0.0, 1.0, 2.5, 3.0, 3.9]
    s = similarity_scores(g, p)
    assert s["pearson"] == pytest.approx(np.corrcoef(g, p)[0, 1])
    assert s["spearman"] == pytest.approx(1.0)
    assert s["mse"] == pytest.approx(np.mean((np.array(g) - np.array(p)) ** 2))
    flat = similarity_scores(g, [2.0] * 5)
    assert flat["constant"] and flat["pearson"] == 0.0


@pytest.mark.parametrize("record,reason", [
    ({"text": "a", "text_pair": "b", "score": "high"},
     "'score' is the string 'high', expected a finite number"),
    ({"text": "a", "text_pair": "b", "score": None}, "'score' is null"),
    ({"text": "a", "text_pair": "b", "score": float("nan")},
     "'score' is NaN, expected a finite number"),  # was "is float, expected a number"
    ({"text": "a", "text_pair": "b", "score": float("-inf")}, "'score' is -Infinity, expected"),
    ({"text": "a", "score": 1.0}, "no pair text field 'text_pair'"),
    ({"text": "a", "text_pair": "", "score": 1.0}, "'text_pair' is empty"),
])
def test_bad_records_name_file_and_line(tmp_path, record, reason):
    f = tmp_path / "train.jsonl"
    good = json.dumps({"text": "x", "text_pair": "y", "score": 1})
    f.write_text(good + "\n" + json.dumps(record) + "\n")
    with pytest.raises(BertkitError, match=reason) as err:
        read_pairs(f)
    assert err.value.line == 2 and str(f) in str(err.value.file)
    read_pairs(f, skip_bad_lines=True)  # skipped instead, with the good line kept


def test_non_numeric_score_exits_1_with_file_and_line(tmp_path, tiny_encoder):
    d = write_sim_dir(tmp_path / "d")
    lines = (d / "train.jsonl").read_text().splitlines()
    lines[3] = json.dumps({"text": "a", "text_pair": "b", "score": "3,5"})
    (d / "train.jsonl").write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["finetune", "sim", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(tmp_path / "run"), *FAST])
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "train.jsonl:4" in text.replace(" ", "") or "train.jsonl, line 4" in text, text
    assert "expected a finite number" in text
    assert not (tmp_path / "run" / "results.json").exists()


def test_finetune_evaluate_predict_and_plain_transformers(tmp_path, tiny_encoder):
    d = write_sim_dir(tmp_path / "d")
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "sim", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(run), *FAST])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    test = results["test"]
    assert results["task"] == "sim" and results["select_metric"] == "pearson"
    assert test["support"] == 6 and -1 <= test["pearson"] <= 1 and test["mse"] >= 0
    config = json.loads((run / "model" / "config.json").read_text())
    assert len(config["id2label"]) == 1  # num_labels 1
    assert config["problem_type"] == "regression"
    preds = [json.loads(x) for x in (run / "test_predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 6 and all(isinstance(p["predicted"], float) for p in preds)
    # the card's snippet, run where bertkit cannot be imported, gives the same scores
    card = (run / "model" / "README.md").read_text()
    assert "problem_type" in card and "AutoModelForSequenceClassification" in card
    snippet = card.split("```python\n", 1)[1].split("```", 1)[0]
    snippet = snippet.replace('["Here, looking', json.dumps([a for a, _, _ in PAIRS]) + ' or ["')
    snippet = snippet.replace('["GATA2 knockdown', json.dumps([b for _, b, _ in PAIRS]) + ' or ["')
    code = ("import sys; sys.modules['bertkit'] = None\n" + snippet +
            "\nprint(' '.join(f'{v:.5f}' for v in score.tolist()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert [float(v) for v in out] == pytest.approx([p["predicted"] for p in preds], abs=1e-4)
    res = runner.invoke(app, ["evaluate", "sim", "-m", str(run), "--data", str(d),
                              "--output", str(tmp_path / "m.json"), "--device", "cpu",
                              "--precision", "fp32"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "m.json").read_text())["pearson"] == \
        pytest.approx(test["pearson"], abs=1e-3)
    res = runner.invoke(app, ["predict", "sim", "-m", str(run), "-i", str(d / "test.jsonl"),
                              "--device", "cpu", "--precision", "fp32"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.output.splitlines() if x.startswith("{")]
    assert [x["predicted"] for x in lines] == pytest.approx([p["predicted"] for p in preds],
                                                            abs=1e-5)
