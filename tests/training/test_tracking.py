"""``--report-to mlflow`` (issue 46): a tiny run writes a real local MLflow store through MLflow's
own client, and the test reads it back with ``MlflowClient``: the settings as parameters, the
training loop's metrics and the final results as metrics, ``curves.png`` and the model card as
artefacts. Without the package: exit 1 naming the extra."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.errors import BertkitError

runner = CliRunner()


@pytest.fixture
def quiet_mlflow(monkeypatch):
    """MLflow without its telemetry and without a tracking URI from the environment."""
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "")  # bertkit sets it; restored afterwards
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")


def _one_run(uri: str, experiment: str = "bertkit"):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment!r} in {uri}"
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1
    return client, runs[0]


def test_finetune_report_to_mlflow_logs_settings_metrics_and_artefacts(tmp_path, monkeypatch,
                                                                       tiny_encoder, quiet_mlflow):
    from bertkit.cli import app
    from tests.tasks.cls.conftest import write_cls_dir

    monkeypatch.chdir(tmp_path)  # the default store: ./mlruns
    data, run = write_cls_dir(tmp_path / "d"), tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(data), "-m", tiny_encoder,
                              "-o", str(run), "--max-length", "12", "--epochs", "2",
                              "--batch-size", "2", "--lr", "1e-3", "--device", "cpu",
                              "--logging-steps", "1", "--report-to", "mlflow"])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    client, found = _one_run((tmp_path / "mlruns").as_uri())
    saved = json.loads((run / "mlflow.json").read_text())
    assert found.info.run_id == saved["run_id"] and found.info.status == "FINISHED"
    assert found.info.run_name == "run" and found.data.tags["bertkit.command"] == "finetune cls"
    assert found.data.tags["bertkit.workflows.command_settings"].startswith("settings: ")

    params = found.data.params  # every setting of config.yaml, as a string
    import yaml

    config = yaml.safe_load((run / "config.yaml").read_text())
    assert set(params) == set(config)
    assert (params["lr"], params["epochs"], params["batch_size"]) == ("0.001", "2", "2")
    assert params["model"] == config["model"] and params["report_to"] == "mlflow"

    # the loop's records: 3 steps an epoch (6 texts, batch 2), a loss at each, dev after each epoch
    losses = client.get_metric_history(found.info.run_id, "train/loss")
    assert [m.step for m in losses] == list(range(1, 7))
    logged = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    train_losses = [r["loss"] for r in logged if r.get("type", "train") == "train" and "loss" in r
                    and "split" not in r]
    assert [m.value for m in losses] == pytest.approx(train_losses)
    dev = client.get_metric_history(found.info.run_id, "dev/macro_f1")
    assert [m.step for m in dev] == [3, 6]
    assert [m.value for m in dev] == pytest.approx([r["macro_f1"] for r in logged
                                                    if r.get("split") == "dev"])
    # the final results (results.json), at the last step, apart from the curves
    metrics = found.data.metrics
    assert metrics["results/test/macro_f1"] == pytest.approx(results["test"]["macro_f1"])
    assert metrics["results/dev/macro_f1"] == pytest.approx(results["dev"]["macro_f1"])
    assert metrics["results/train_seconds"] == pytest.approx(results["train_seconds"])
    assert metrics["results/steps"] == 6
    assert client.get_metric_history(found.info.run_id, "results/test/macro_f1")[0].step == 6

    top = {a.path for a in client.list_artifacts(found.info.run_id)}
    assert {"curves.png", "results.json", "config.yaml", "model"} <= top
    assert [a.path for a in client.list_artifacts(found.info.run_id, "model")] == \
        ["model/README.md"]
    card = client.download_artifacts(found.info.run_id, "model/README.md", str(tmp_path / "dl"))
    assert Path(card).read_text() == (run / "model" / "README.md").read_text()
    png = client.download_artifacts(found.info.run_id, "curves.png", str(tmp_path / "dl"))
    assert Path(png).read_bytes()[:4] == b"\x89PNG"


def test_loop_alone_tracking_uri_stop_and_resume(tmp_path, monkeypatch, quiet_mlflow):
    """``train`` called alone opens its own MLflow run in ``$MLFLOW_TRACKING_URI``; a run stopped
    by SIGTERM ends KILLED, and ``--resume`` continues the same MLflow run to FINISHED."""
    from tests.training.test_loop import Signalled, Source, run

    store = tmp_path / "elsewhere"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.as_uri())
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "toy")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BertkitError, match="stopped by SIGTERM at step 13"):
        run(tmp_path / "cut", Signalled(13), save_steps=0, report_to="mlflow")
    client, first = _one_run(store.as_uri(), "toy")
    assert first.info.status == "KILLED" and first.data.tags["bertkit.command"] == "train"
    assert max(m.step for m in client.get_metric_history(first.info.run_id, "train/loss")) == 13
    run(tmp_path / "cut", Source(), save_steps=0, resume=True, report_to="mlflow")
    client, again = _one_run(store.as_uri(), "toy")
    assert again.info.run_id == first.info.run_id and again.info.status == "FINISHED"
    assert again.data.params["resume"] == "False"  # parameters of the first start are kept
    steps = {m.step for m in client.get_metric_history(again.info.run_id, "train/loss")}
    assert steps == set(range(1, 31))
    assert [a.path for a in client.list_artifacts(again.info.run_id)] == ["curves.png"]
    assert not (tmp_path / "mlruns").exists()  # the URI, not ./mlruns


def test_missing_mlflow_exits_1_naming_the_extra(tmp_path, monkeypatch, ner_dir):
    import importlib.util

    from bertkit.cli import app

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mlflow" else real(name, *a))
    res = runner.invoke(app, ["finetune", "ner", "--data", str(ner_dir), "-o",
                              str(tmp_path / "run"), "--report-to", "mlflow"])
    assert res.exit_code == 1
    text = " ".join(res.output.split())
    assert "error: --report-to mlflow needs MLflow's client" in text
    assert "bertkit[mlflow]" in text and "Traceback" not in res.output
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_numbers_flattens_results_for_mlflow():
    from bertkit.training.tracking import numbers

    got = numbers({"test": {"f1": 0.5, "per_label": {"B:x": 1}, "labels": ["a"]}, "ok": True,
                   "steps": 3, "loss": float("nan"), "name": "x"})
    assert got == {"test/f1": 0.5, "test/per_label/B_x": 1.0, "steps": 3.0}
