"""The benchmark scripts' summary wording: a goal met by the median only says so, and a
difference inside the seed spread is marked as no gain (benchmarks/re_vs_stock.py,
benchmarks/adaptation.py)."""

import importlib.util
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
