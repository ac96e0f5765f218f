"""Curves from metrics.jsonl: a PNG with the loss and evaluation series; bad lines are named."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.outputs.plots import _series, plot_run, read_metrics


def _write(run, records):
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_plot_writes_a_png_with_every_series(tmp_path):
    run = tmp_path / "run"
    _write(run, [{"type": "train", "step": s, "loss": 3.0 / s, "mlm_loss": 2.0 / s, "sbo_loss": 1.0 / s}
                 for s in range(1, 6)] + [{"type": "eval", "split": "dev", "step": 5, "f1": 0.5}])
    recs = read_metrics(run / "metrics.jsonl")
    train = _series(recs, "train", lambda r: [k for k in r if k.endswith("loss")])
    assert sorted(train) == ["loss", "mlm_loss", "sbo_loss"] and train["loss"][0] == [1, 2, 3, 4, 5]
    res = CliRunner().invoke(app, ["plot", str(run)])
    assert res.exit_code == 0, res.output
    png = (run / "curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_bad_metrics_line_is_named(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"type": "train", "step": 1, "loss": 1}\n{broken\n')
    with pytest.raises(BertkitError, match=r"metrics.jsonl:2: not JSON"):
        plot_run(run)
    res = CliRunner().invoke(app, ["plot", str(tmp_path / "missing")])
    assert res.exit_code == 1 and "no metrics.jsonl" in res.output
    assert not (run / "curves.png").exists()
