"""``--report-to mlflow`` against a tracking server that cannot be reached (checked first, with a
short timeout, before any data or model is loaded) and on a copied run folder resumed (its own
MLflow run, recording the run it branched from): issue 66, kinds 11-12."""

from __future__ import annotations

import shutil
import socket
import time

import pytest
from typer.testing import CliRunner

from bertkit.errors import BertkitError
from tests.training.test_tracking import _one_run, quiet_mlflow  # noqa: F401  (a fixture)

runner = CliRunner()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _finetune(tmp_path, data):
    from bertkit.cli import app

    return runner.invoke(app, ["finetune", "ner", "--data", str(data), "-o",
                               str(tmp_path / "run"), "--report-to", "mlflow"])


def test_unreachable_server_exits_1_at_once_before_data_is_read(tmp_path, monkeypatch,
                                                                 quiet_mlflow):
    uri = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    import bertkit.cli  # noqa: F401  (its import is not what is timed)

    start = time.monotonic()
    res = _finetune(tmp_path, tmp_path / "no-such-data")  # the data would fail second
    text = " ".join(res.output.split())
    # at once: MLflow's client retried such a server for about 4 minutes
    assert res.exit_code == 1 and time.monotonic() - start < 30, res.output
    assert f"error: --report-to mlflow: the tracking server {uri} cannot be reached" in text
    assert "refused" in text and text.count("error:") == 1 and "Traceback" not in res.output
    assert not (tmp_path / "run").exists()


def test_a_server_that_never_answers_times_out_quickly(tmp_path, monkeypatch, quiet_mlflow):
    from bertkit.training import tracking

    listener = socket.socket()  # accepts the connection, never answers
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        monkeypatch.setattr(tracking, "CHECK_TIMEOUT_S", 0.5)
        uri = f"http://127.0.0.1:{listener.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(BertkitError, match=r"no answer within 0.5 s"):
            tracking.check_reachable(uri)
        assert time.monotonic() - start < 3
    finally:
        listener.close()


def test_a_file_store_is_not_probed():
    from bertkit.training.tracking import check_reachable

    check_reachable("file:///nonexistent/mlruns")  # nothing to reach: no error


def _stopped_run(tmp_path, monkeypatch) -> str:
    """A toy training stopped by SIGTERM at step 13 in ``tmp_path/cut``, tracked in a file
    store (its URI returned), experiment ``toy``."""
    from tests.training.test_loop import Signalled, run

    store = (tmp_path / "store").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "toy")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BertkitError, match="stopped by SIGTERM at step 13"):
        run(tmp_path / "cut", Signalled(13), save_steps=0, report_to="mlflow")
    return store


def test_copied_run_folder_resumed_opens_its_own_run(tmp_path, monkeypatch, quiet_mlflow):
    from tests.training.test_loop import Source, run

    client, first = _one_run(_stopped_run(tmp_path, monkeypatch), "toy")
    shutil.copytree(tmp_path / "cut", tmp_path / "copy")  # cp -r of the folder
    run(tmp_path / "copy", Source(), save_steps=0, resume=True, report_to="mlflow")
    exp = client.get_experiment_by_name("toy")
    runs = {r.info.run_id: r for r in client.search_runs([exp.experiment_id])}
    assert len(runs) == 2  # not both trainings in one run
    (branch,) = [r for r in runs.values() if r.info.run_id != first.info.run_id]
    assert branch.data.tags["bertkit.branched_from_run"] == first.info.run_id
    assert branch.data.tags["bertkit.branched_from_dir"] == str((tmp_path / "cut").resolve())
    assert branch.data.tags["bertkit.run_dir"] == str((tmp_path / "copy").resolve())
    assert branch.info.status == "FINISHED"
    steps = [m.step for m in client.get_metric_history(first.info.run_id, "train/loss")]
    assert sorted(steps) == list(range(1, 14))  # the first run: only its own steps, once
    assert client.get_run(first.info.run_id).info.status == "KILLED"
    # the original folder still continues its own run
    run(tmp_path / "cut", Source(), save_steps=0, resume=True, report_to="mlflow")
    assert len(client.search_runs([exp.experiment_id])) == 2
    assert client.get_run(first.info.run_id).info.status == "FINISHED"


def test_moved_run_folder_resumed_continues_its_run(tmp_path, monkeypatch, quiet_mlflow):
    from tests.training.test_loop import Source, run

    store = _stopped_run(tmp_path, monkeypatch)
    shutil.move(tmp_path / "cut", tmp_path / "moved")
    run(tmp_path / "moved", Source(), save_steps=0, resume=True, report_to="mlflow")
    client, only = _one_run(store, "toy")
    assert only.info.status == "FINISHED"
    assert only.data.tags["bertkit.run_dir"] == str((tmp_path / "moved").resolve())
