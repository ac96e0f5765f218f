"""benchmarks/seed_summary.py: mean and sample sd over seeds of results.json test scores, in
points, written beside the runs (the README's HoC figure comes from it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _results(folder: Path, seed: int, f1: float, epoch: int) -> None:
    (folder / f"seed-{seed}.results.json").write_text(
        json.dumps({"best_epoch": epoch, "test": {"hoc_f1": f1, "macro_f1": f1 / 2}}))


def test_mean_and_sample_sd_by_hand(tmp_path):
    for seed, f1, epoch in ((1, 0.70, 9), (2, 0.74, 8), (3, 0.72, 8)):
        _results(tmp_path, seed, f1, epoch)
    res = subprocess.run([sys.executable, str(BENCHMARKS / "seed_summary.py"), str(tmp_path),
                          "--metrics", "hoc_f1,macro_f1"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    # 70, 74, 72 points: mean 72, sample sd sqrt((4 + 4 + 0) / 2) = 2
    assert "hoc_f1: 72.00 ± 2.00 (n=3; 70.00, 74.00, 72.00)" in res.stdout
    assert "macro_f1: 36.00 ± 1.00 (n=3" in res.stdout and "best epochs: 9, 8, 8" in res.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["hoc_f1"]["n"] == 3 and abs(summary["hoc_f1"]["sd"] - 2.0) < 1e-9


def test_a_missing_metric_names_the_file(tmp_path):
    _results(tmp_path, 1, 0.7, 1)
    res = subprocess.run([sys.executable, str(BENCHMARKS / "seed_summary.py"), str(tmp_path),
                          "--metrics", "pearson"], capture_output=True, text=True)
    assert res.returncode == 1 and "seed-1.results.json: no test 'pearson'" in res.stderr
    assert not (tmp_path / "summary.json").exists()
