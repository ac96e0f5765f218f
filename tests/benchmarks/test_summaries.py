"""The benchmark scripts' summaries: a goal met by the median only says so, a difference inside
the seed spread is marked as no gain, and the dev curves are averaged per epoch
(benchmarks/re_vs_stock.py, adaptation.py, adaptation_curves.py)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _re_results(micro: dict[str, list[float]]) -> dict:
    return {side: {seed: {"test": {"micro_f1": f / 100, "macro_f1": f / 200},
                          "train_pairs_per_second": 10.0 if side == "bertkit" else 5.0}
                   for seed, f in zip((1, 2, 3), values)}
            for side, values in micro.items()}


@pytest.mark.parametrize("bertkit, note, met", [
    ([75.0, 76.0, 77.0], "met (every seed)", True),
    ([72.5, 76.0, 77.0], "met (by the median only; per-seed minimum +0.50)", True),
    ([71.0, 76.0, 77.0], "met (by the median; the per-seed spread includes 0)", True),
    ([72.0, 73.0, 77.0], "MISSED", False),
])
def test_re_vs_stock_goal_wording(bertkit, note, met):
    lines = []
    comparisons, goals = _script("re_vs_stock").summarise(
        _re_results({"stock-grouped": [72.0, 73.0, 74.0], "bertkit": bertkit}), [1, 2, 3],
        "test", lines.append)
    row = next(line for line in lines if line.startswith("bertkit - stock-grouped"))
    assert f"{note}; throughput 2.00x" in row
    assert comparisons["bertkit - stock-grouped"]["goal_met"] is met
    assert goals["plus2_over_stock"] is met


def _variant(label: str, values: list[float], sd: float) -> dict:
    return {"label": label, "masking": None if label.startswith("(a)") else "token",
            "adapt_minutes": 0.0 if label.startswith("(a)") else 10.0,
            "scores": {"f1": {"mean": sum(values) / len(values), "sd": sd, "values": values}}}


def test_adaptation_table_marks_a_gain_inside_the_spread():
    rows = [_variant("(a) original", [72.0, 74.0, 76.0], 2.0),
            _variant("(c) TAPT", [73.0, 75.0, 77.0], 1.0),  # +1.00, inside (a)'s sd of 2
            _variant("(b) DAPT", [75.5, 77.0, 78.5], 1.5)]  # +3.00, outside both
    lines = _script("adaptation").table("ner", rows)
    assert lines[0] == "BC5CDR NER, test entity F1 (strict), mean +- sd over 3 seed(s)"
    tapt = next(line for line in lines if line.startswith("(c) TAPT"))
    dapt = next(line for line in lines if line.startswith("(b) DAPT"))
    assert "+1.00*" in tapt and "73.00 75.00 77.00" in tapt
    assert "+3.00 " in dapt and "+3.00*" not in dapt
    assert lines[-1].startswith("* inside the larger seed spread")
    assert not _script("adaptation").table("ner", [rows[0], rows[2]])[-1].startswith("*")


def _runs(root: Path, task: str, variant: str, curves: dict[int, list[float]]) -> None:
    for seed, curve in curves.items():
        run = root / task / variant / f"seed-{seed}"
        run.mkdir(parents=True)
        lines = [{"type": "train", "step": 1, "loss": 1.0}]
        lines += [{"type": "eval", "split": "dev", "step": 10 * (e + 1), "f1": v / 100}
                  for e, v in enumerate(curve)]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))


def test_adaptation_curves_per_epoch_means_and_checks(tmp_path, monkeypatch, capsys):
    """Dev F1 per epoch, mean over seeds, and the difference from (a); (a)'s copies must agree;
    a line that is not JSON names the file and line."""
    curves = _script("adaptation_curves")
    _runs(tmp_path / "one", "ner", "a", {1: [50.0, 70.0], 2: [54.0, 72.0]})
    _runs(tmp_path / "one", "ner", "c-token", {1: [56.0, 73.0], 2: [58.0, 73.0]})
    _runs(tmp_path / "two", "ner", "a", {1: [50.0, 70.0], 2: [54.0, 72.0]})
    monkeypatch.setattr(sys, "argv", ["x", str(tmp_path / "one"), str(tmp_path / "two")])
    curves.main()
    out = capsys.readouterr().out.splitlines()
    a = next(line for line in out if line.strip().startswith("a "))
    tapt = next(line for line in out if "one/c-token" in line)
    assert "52.0 /  71.0" in a and "(seed 1: 50.0/70.0; seed 2: 54.0/72.0)" in a
    assert "57.0 /  73.0" in tapt and "vs (a)  +5.0  /  +2.0 " in tapt  # both outside (a)'s sd
    assert "* inside the larger seed spread" in out[-1]
    _runs(tmp_path / "subset", "ner", "a", {2: [54.0, 72.0]})  # a copy of seed 2 only: fine
    monkeypatch.setattr(sys, "argv", ["x", str(tmp_path / "one"), str(tmp_path / "subset")])
    curves.main()
    assert "52.0 /  71.0" in capsys.readouterr().out
    _runs(tmp_path / "three", "ner", "a", {1: [50.0, 71.0], 2: [54.0, 72.0]})
    monkeypatch.setattr(sys, "argv", ["x", str(tmp_path / "one"), str(tmp_path / "three")])
    with pytest.raises(SystemExit, match="\\(a\\)'s runs differ from those read before"):
        curves.main()
    (tmp_path / "one" / "ner" / "a" / "seed-1" / "metrics.jsonl").write_text('{"type": "eval"\n')
    monkeypatch.setattr(sys, "argv", ["x", str(tmp_path / "one")])
    with pytest.raises(SystemExit, match=r"seed-1/metrics.jsonl:1: not a JSON object"):
        curves.main()
