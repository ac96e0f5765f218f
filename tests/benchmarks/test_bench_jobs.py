"""benchmarks/bench_jobs.py (issue 43): its suite parses, the runs interleave, the dry run runs
and writes nothing, the summary's medians and ratio. No fine-tuning."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bj():
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("benchmark_bench_jobs", BENCHMARKS / "bench_jobs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_small_suite_parses(bj, tmp_path):
    from bertkit.bench.suite import load_suite

    (tmp_path / "s.yaml").write_text(bj.SUITE)
    suite = load_suite(tmp_path / "s.yaml")
    assert [t.name for t in suite.tasks] == ["bc5cdr", "scicite"]


def test_dry_run_interleaves_and_writes_nothing(bj, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert bj.main(["--dry-run", "--repeats", "2", "--work", str(tmp_path / "w"),
                    "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines[:4]] == [
        "repeat 0 --jobs 1", "repeat 0 --jobs 2", "repeat 1 --jobs 2", "repeat 1 --jobs 1"]
    assert "bench run" in lines[0] and "--jobs 2 --no-report" in lines[1]
    assert not out.exists() and not (tmp_path / "w").exists()


def test_summary_medians_and_ratio(bj):
    runs = [{"jobs": 1, "wall_s": w, "returncode": 0} for w in (100.0, 120.0, 110.0)] + \
           [{"jobs": 2, "wall_s": w, "returncode": 0} for w in (60.0, 50.0)] + \
           [{"jobs": 2, "wall_s": 1.0, "returncode": 1}]  # a failed run is not timed
    s = bj.summarise(runs, [1, 2])
    assert s["1"]["median_s"] == 110.0 and s["2"]["median_s"] == 55.0 and s["2"]["n"] == 2
    assert s["2"]["speedup_vs_first"] == 2.0
