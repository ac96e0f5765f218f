"""``bertkit bench run`` end to end on tiny slices of the shared data: a tiny random BERT and
the packaged MiniLM's vocabulary, 24 training and test examples, one epoch, two seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bertkit.bench.declarations import METRICS
from bertkit.cli import app

pytestmark = pytest.mark.integration

SUITE = """\
name: tiny
seeds: [1, 2]
defaults: {epochs: 1, max_length: 64, lr: 1.0e-3}
tasks:
  - {name: bc5cdr, task: ner, data: bc5cdr, metric: entity_f1, family: ner,
     lite: {max_train_samples: 24, max_eval_samples: 24}}
  - {name: chemprot, task: re, data: chemprot, metric: micro_f1, family: re,
     lite: {max_train_samples: 24, max_eval_samples: 24}}
references:
  - {model: SciBERT, size: base (110 M), source: Beltagy et al. 2019, scores: {bc5cdr: 90.01}}
"""


def test_bench_run_and_report_on_tiny_slices(tmp_path, tiny_encoder, still_encoder):
    suite = tmp_path / "tiny.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "bench"
    args = ["bench", "run", str(suite), "-e", f"tiny={tiny_encoder}", "-e",
            f"still={still_encoder}", "--budget", "lite", "--jobs", "2", "-o", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "stages: 8 run, 0 kept" in res.output
    for name in ("report.md", "report.json", "report.png"):
        assert (out / name).stat().st_size > 0
    report = json.loads((out / "report.json").read_text())
    cell = report["encoders"]["still"]["tasks"]["bc5cdr"]
    assert cell["n"] == 2 and len(cell["scores"]) == 2
    assert "lite: not comparable with the published numbers" in (out / "report.md").read_text()
    assert set(report["comparisons"]["still"]) == {"bc5cdr", "chemprot"}

    # the stage trained with exactly the settings finetune records, and its per-item statistics
    # give back the task's own test score (what the bootstrap resamples)
    record = json.loads((out / "stages/tiny/bc5cdr/seed-2.json").read_text())
    run = out / record["run"]  # relative to the results folder, so a moved folder still works
    assert not Path(record["run"]).is_absolute()
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert {k: saved[k] for k in record["settings"]} == record["settings"]
    assert saved["seed"] == 2 and saved["max_train_samples"] == 24
    results = json.loads((run / "results.json").read_text())
    spec = METRICS["entity_f1"]
    stats = spec.stats(run, results)
    assert 100 * float(spec.score(stats.sum(axis=0))) == pytest.approx(record["score"])

    # the same command again keeps every stage; with other caps it is refused, nothing lost
    res = CliRunner().invoke(app, args + ["--no-report"])
    assert res.exit_code == 0 and "stages: 0 run, 8 kept" in res.output
    before = {p: p.read_bytes() for p in (out / "stages").rglob("*.json")}
    suite.write_text(SUITE.replace("max_train_samples: 24, max_eval", "max_train_samples: 32, "
                                   "max_eval"), encoding="utf-8")
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1
    assert "finished with other settings: max_train_samples: 24 -> 32" in " ".join(
        res.output.split())
    assert {p: p.read_bytes() for p in (out / "stages").rglob("*.json")} == before
