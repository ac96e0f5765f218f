"""Similarity data a run cannot trust: scores outside the set's declared range, a constant training
split, splits on two scales, constant gold in dev or test (undefined correlations, issue 66
items 7-8; issue 63's bad input)."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.metrics.sim import similarity_scores
from bertkit.tasks.sim.data import check_scales, load_sim_data, read_pairs
from tests.tasks.sim.conftest import PAIRS, write_sim_dir

runner = CliRunner()
FAST = ["--epochs", "2", "--batch-size", "4", "--lr", "1e-3", "--device", "cpu",
        "--precision", "fp32"]


def _flat(output: str) -> str:
    return " ".join(output.split())


def test_constant_gold_gives_undefined_correlations_not_zero():
    s = similarity_scores([2.0, 2.0, 2.0], [1.0, 2.0, 3.0])
    assert s["pearson"] is None and s["spearman"] is None  # was 0.0
    assert s["constant_gold"] and not s["constant"]
    assert "every gold score is the same (2)" in s["undefined"]
    assert "the predictions vary" in s["undefined"]
    flat = similarity_scores([1.0, 2.0, 3.0], [2.0, 2.0, 2.0])  # the predictions' side
    assert flat["pearson"] == 0.0 and flat["constant"] and not flat["constant_gold"]
    assert "undefined" not in flat


def test_a_pair_outside_the_declared_range_is_refused_with_file_and_line(tmp_path, monkeypatch):
    root = tmp_path / "data"
    d = write_sim_dir(root / "sim" / "biosses")
    rows = (d / "dev.jsonl").read_text().splitlines()
    rows[2] = json.dumps({"text": "a", "text_pair": "b", "score": 4.5})
    (d / "dev.jsonl").write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("BERTKIT_DATA", str(root))
    for data in ("biosses", str(d)):  # by name, and its folder given by path
        with pytest.raises(BertkitError) as err:
            load_sim_data(data, ("train", "dev"))
        assert err.value.line == 3 and str(err.value.file).endswith("dev.jsonl")
        assert "score 4.5 is outside the range 0-4 that" in str(err.value)
    # the same file in a directory of its own: no declared range, read as it is
    load_sim_data(str(write_sim_dir(tmp_path / "own")), ("dev",))


def test_constant_training_scores_exit_1(tmp_path, tiny_encoder):
    d = write_sim_dir(tmp_path / "d", [(a, b, 2.0) for a, b, _ in PAIRS])
    res = runner.invoke(app, ["finetune", "sim", "--data", str(d), "-m", tiny_encoder,
                              "--architecture", "bi-encoder", "-o", str(tmp_path / "run"), *FAST])
    assert res.exit_code == 1
    text = _flat(res.output)
    assert "every training score is the same (2, 6 pairs)" in text and "train.jsonl" in text
    assert not (tmp_path / "run").exists()


def test_splits_on_two_scales_are_refused_with_both_ranges(tmp_path, tiny_encoder):
    d = write_sim_dir(tmp_path / "d")  # 0-4 everywhere
    (d / "train.jsonl").write_text("".join(
        json.dumps({"text": a, "text_pair": b, "score": s / 4}) + "\n" for a, b, s in PAIRS))
    res = runner.invoke(app, ["finetune", "sim", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(tmp_path / "run"), *FAST])
    assert res.exit_code == 1
    text = _flat(res.output)
    assert "two scales: train 0 to 1 (6 pairs" in text and "dev 0 to 4 (6 pairs)" in text
    assert not (tmp_path / "run").exists()


def test_close_ranges_are_one_scale():
    xs = read_pairs_list([0.2, 1.0, 2.0, 3.0, 3.6])
    ys = read_pairs_list([0.0, 1.5, 2.5, 3.5, 4.0])
    check_scales({"train": xs, "dev": ys, "test": ys}, {})  # no error


def read_pairs_list(scores):
    from bertkit.tasks.sim.data import PairExample

    return [PairExample("a", "b", s) for s in scores]


def test_constant_gold_in_dev_chooses_no_epoch_and_test_says_undefined(tmp_path, tiny_encoder):
    d = write_sim_dir(tmp_path / "d")
    constant = "".join(json.dumps({"text": a, "text_pair": b, "score": 3.0}) + "\n"
                       for a, b, _ in PAIRS)
    (d / "dev.jsonl").write_text(constant)
    (d / "test.jsonl").write_text(constant)
    res = runner.invoke(app, ["finetune", "sim", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(tmp_path / "run"), *FAST])
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "dev pearson undefined: every gold score is the same (3)" in text
    assert "not used to choose an epoch" in text
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["best_epoch"] is None and results["dev"] is None  # the last weights kept
    assert results["test"]["pearson"] is None and results["test"]["constant_gold"]
    assert "undefined" in text
    log = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r for r in log if r.get("type") == "eval"]  # evaluated, just not chosen on
