"""Experiment tracking through MLflow's own client (``--report-to mlflow``), as the Trainer's
``MLflowCallback`` gives its users: one MLflow run per bertkit run, with

* the command's settings (the run's ``config.yaml``) as the run's parameters, and the command,
  run directory and settings-source line as tags;
* every record of ``metrics.jsonl`` with a step as metrics at that step, named as on TensorBoard
  (``train/loss``, ``train/lr``, ``dev/f1``, ...);
* at the end, the final results (``results.json``'s numbers) as metrics named after that file
  (``results/test/f1``, ``results/dev/f1`` for the kept epoch, ``results/train_seconds``, ...;
  the prefix keeps them apart from the curves), and ``curves.png``, ``model/README.md`` (the
  model card), ``results.json`` and ``config.yaml`` as artefacts.

Where: ``$MLFLOW_TRACKING_URI`` when set (a server, ``sqlite:///...``, a ``file:`` folder),
else a local file store ``mlruns/`` in the current working directory (MLflow's classic default:
every run started from one folder lands in one store, so ``mlflow ui`` there compares them).
MLflow 3 keeps file stores in maintenance mode and refuses them unless
``MLFLOW_ALLOW_FILE_STORE`` is true: bertkit sets that variable (when unset) for a file store
(its default, or a ``file:`` URI the user gives) only. The experiment is ``$MLFLOW_EXPERIMENT_NAME``, else ``bertkit``; the run's name is the run
directory's name (``seed-N`` runs: ``<parent>/seed-N``).

The MLflow run's id is kept in the run directory (``mlflow.json``), so ``--resume`` continues the
same MLflow run (records redone after the checkpoint are logged again at their steps; MLflow
keeps both values); a copied run folder resumed opens a run of its own, tagged with the run it
branched from (composer PR #3208, transformers#30563), where both trainings logged into one run
before. A tracking server (``http(s)``) is checked first, with a short timeout
(:func:`check_reachable`), before any data or model is loaded. Only the main process tracks. Needs the ``mlflow`` package
(``pip install 'bertkit[mlflow]'``, which installs ``mlflow-skinny``); imported only when asked.

Part of the training core: knows no task (the driver passes its results dict and run folder).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from bertkit.errors import BertkitError

RUN_FILE = "mlflow.json"
"""In the run directory: ``{"tracking_uri", "experiment_id", "run_id"}`` of its MLflow run."""
ARTEFACTS = ("curves.png", "model/README.md", "results.json", "config.yaml")
"""Files of the run directory logged as artefacts at the end, where they exist (the model card
goes under ``model/``)."""
DEFAULT_EXPERIMENT = "bertkit"
INSTALL_HINT = "pip install 'bertkit[mlflow]' (MLflow's client, the mlflow-skinny package)"
_MAX_PARAM = 6000  # MLflow's longest parameter value (characters); config.yaml has all in full
_MAX_TAG = 5000
_BAD_KEY = re.compile(r"[^\w./\- ]")


def require_mlflow() -> None:
    """Check that MLflow's client can be imported (before anything is loaded or written).

    Raises:
        BertkitError: the ``mlflow`` package is not installed, naming the extra to install.
    """
    import importlib.util

    if importlib.util.find_spec("mlflow") is None:
        raise BertkitError("--report-to mlflow needs MLflow's client (the mlflow package), "
                           "which is not installed", expected=INSTALL_HINT)


CHECK_TIMEOUT_S = 5.0
"""How long :func:`check_reachable` waits for a tracking server's answer (seconds): MLflow's own
client retries an unreachable server for minutes (``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` 7 with
backoff, each request up to ``MLFLOW_HTTP_REQUEST_TIMEOUT`` 120 s)."""


def check_reachable(uri: str, timeout: float | None = None) -> None:
    """Check, once, that an ``http(s)`` tracking server at ``uri`` answers within ``timeout``
    seconds (:data:`CHECK_TIMEOUT_S`): a GET of its ``/health`` endpoint, any HTTP answer (an
    error status too: a server that answers is there) counting. Other stores (a ``file:``
    folder, ``sqlite:``, ``databricks``) are not checked here. Called before any data or model
    is loaded, so an unreachable server is said at once, not after minutes of the client's
    silent retries (mlflow#12154).

    Raises:
        BertkitError: no answer (refused, unknown host, timed out), naming the URI and cause.
    """
    import socket
    import urllib.error
    import urllib.request
    from urllib.parse import urlparse

    if urlparse(uri).scheme not in ("http", "https"):
        return
    timeout = CHECK_TIMEOUT_S if timeout is None else timeout
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout):
            return
    except urllib.error.HTTPError:
        return  # it answered
    except (urllib.error.URLError, socket.timeout, TimeoutError, OSError, ValueError) as exc:
        cause = getattr(exc, "reason", None) or exc
        if isinstance(cause, (socket.timeout, TimeoutError)) or "timed out" in str(cause):
            cause = f"no answer within {timeout:g} s"
        raise BertkitError(f"--report-to mlflow: the tracking server {uri} cannot be reached "
                           f"({cause}); checked before loading any data or model",
                           expected="a running MLflow server at MLFLOW_TRACKING_URI, or unset "
                                    "it for a local ./mlruns store") from None


def tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI``, else the ``file:`` URI of ``./mlruns`` (module docstring). For a
    file store (either), ``MLFLOW_ALLOW_FILE_STORE`` is set to true when unset (MLflow 3
    refuses a file store otherwise)."""
    from urllib.parse import urlparse

    uri = os.environ.get("MLFLOW_TRACKING_URI", "").strip() or \
        (Path.cwd() / "mlruns").resolve().as_uri()
    if urlparse(uri).scheme in ("", "file"):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    return uri


def numbers(record: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """The numeric leaves of ``record`` as ``{"prefix/key": value}`` (nested dicts joined by
    ``/``; booleans, strings, lists and non-finite values left out), keys made valid for MLflow
    (letters, digits, ``_ - . / space``; anything else becomes ``_``)."""
    out: dict[str, float] = {}
    for key, value in record.items():
        name = _BAD_KEY.sub("_", f"{prefix}{key}")
        if isinstance(value, dict):
            out.update(numbers(value, name + "/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) \
                and value == value and abs(value) != float("inf"):
            out[name] = float(value)
    return out


class MlflowRun:
    """One bertkit run's MLflow run, written through :class:`mlflow.MlflowClient`.

    Use :meth:`start` to open (or, on ``--resume``, reopen) it; :meth:`log_record` for each
    ``metrics.jsonl`` record; :meth:`finish` at the end. As a context manager, an exception
    leaving the block ends the MLflow run as ``KILLED`` (a stop by SIGINT/SIGTERM, resumable)
    or ``FAILED``.

    Attributes:
        client: the ``MlflowClient``; ``run_id``: the MLflow run's id; ``tracking_uri``: where.
    """

    def __init__(self, client: Any, run_id: str, tracking_uri: str) -> None:
        self.client, self.run_id, self.tracking_uri = client, run_id, tracking_uri
        self.ended = False
        self.branched_from: tuple[str, str] | None = None  # (run id, run folder) of a copy

    @classmethod
    def start(cls, run_dir: Path, settings: dict[str, Any], command: str,
              resume: bool = False, sources: str | None = None) -> MlflowRun:
        """Open the MLflow run of ``run_dir`` and log ``settings`` as its parameters.

        Args:
            run_dir: the bertkit run directory (exists); ``mlflow.json`` is written there.
            settings: the command's settings (as ``config.yaml``); values become strings
                (``None`` as ``None``, lists as JSON), cut at 6,000 characters (MLflow's limit).
            command: ``"finetune ner"``, ``"pretrain"``, ...: the ``bertkit.command`` tag.
            resume: continue the MLflow run named in ``run_dir/mlflow.json`` when it is in the
                same store (parameters it already has are kept); else a new run. A copy of a
                run folder (the run's ``bertkit.run_dir`` tag names another folder that still
                holds it) gets a new run, tagged ``bertkit.branched_from_run`` and
                ``bertkit.branched_from_dir`` (:attr:`branched_from`), so two trainings never
                log into one run; a moved folder continues its run (the tag updated).
            sources: the settings-source line (``bertkit.workflows.command_settings`` tag), if any.

        Raises:
            BertkitError: MLflow is not installed, or the tracking store cannot be reached or
                written (naming the URI).
        """
        require_mlflow()
        from mlflow import MlflowClient

        uri = tracking_uri()
        branched = None
        try:
            client = MlflowClient(tracking_uri=uri)
            run_id, known, branched = _resumed(client, run_dir, uri) if resume else \
                (None, {}, None)
            if run_id is None:
                name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
                found = client.get_experiment_by_name(name)
                experiment = found.experiment_id if found else client.create_experiment(name)
                run_name = run_dir.name if not run_dir.name.startswith("seed-") \
                    else f"{run_dir.parent.name}/{run_dir.name}"
                tags = {"bertkit.command": command, "bertkit.run_dir": str(run_dir.resolve()),
                        "mlflow.source.name": f"bertkit {command}"}
                if sources:
                    tags["bertkit.workflows.command_settings"] = sources[:_MAX_TAG]
                if branched:  # a copied run folder resumed: its own run, saying where from
                    tags.update({"bertkit.branched_from_run": branched[0],
                                 "bertkit.branched_from_dir": branched[1][:_MAX_TAG]})
                run = client.create_run(experiment, run_name=run_name, tags=tags)
                run_id = run.info.run_id
                _write_run_file(run_dir, {"tracking_uri": uri, "experiment_id": experiment,
                                          "run_id": run_id})
            tracker = cls(client, run_id, uri)
            tracker.branched_from = branched
            tracker._log_params({k: v for k, v in settings.items() if k not in known})
        except BertkitError:
            raise
        except Exception as exc:  # mlflow's own errors: an unreachable server, a bad URI
            raise BertkitError(f"--report-to mlflow: could not open a run in {uri}: {exc}",
                               expected="a reachable MLFLOW_TRACKING_URI, or unset it for "
                                        "./mlruns") from exc
        return tracker

    def _log_params(self, settings: dict[str, Any]) -> None:
        from mlflow.entities import Param

        params = [Param(_BAD_KEY.sub("_", str(k)), _param_value(v)[:_MAX_PARAM])
                  for k, v in settings.items()]
        for i in range(0, len(params), 100):  # MLflow takes 100 parameters per batch
            self.client.log_batch(self.run_id, params=params[i:i + 100])

    def log_metrics(self, values: dict[str, float], step: int) -> None:
        """Log ``{name: value}`` at optimiser step ``step`` (one request)."""
        if not values:
            return
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, int(step)) for k, v in values.items()]
        for i in range(0, len(metrics), 1000):  # MLflow takes 1,000 metrics per batch
            self.client.log_batch(self.run_id, metrics=metrics[i:i + 1000])

    def log_record(self, record: dict[str, Any]) -> None:
        """Log one ``metrics.jsonl`` record with a ``step``: its numeric fields, less ``step``,
        ``epoch`` and ``time_s``, as ``<split or type>/<field>`` (TensorBoard's names)."""
        if "step" not in record:
            return
        group = record.get("split") or record.get("type", "train")
        fields = {k: v for k, v in record.items() if k not in ("step", "epoch", "time_s",
                                                               "split", "type")}
        self.log_metrics(numbers(fields, f"{group}/"), record["step"])

    def finish(self, run_dir: Path, results: dict[str, Any] | None = None) -> None:
        """Log ``results``' numbers as ``results/...`` metrics (at its ``steps``, else 0), the
        run's
        :data:`ARTEFACTS` that exist, and end the MLflow run as ``FINISHED``."""
        results = results or {}
        step = results.get("steps") if isinstance(results.get("steps"), int) else 0
        self.log_metrics(numbers(results, "results/"), step)
        for name in ARTEFACTS:
            path = Path(run_dir) / name
            if path.is_file():
                parent = str(Path(name).parent)
                self.client.log_artifact(self.run_id, str(path),
                                         artifact_path=None if parent == "." else parent)
        self.end("FINISHED")

    def end(self, status: str) -> None:
        """End the MLflow run with ``status`` (``FINISHED``, ``FAILED``, ``KILLED``), once."""
        if not self.ended:
            self.ended = True
            self.client.set_terminated(self.run_id, status=status)

    def __enter__(self) -> MlflowRun:
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is not None and not self.ended:
            stopped = isinstance(exc, KeyboardInterrupt) or getattr(exc, "exit_code", 1) in (130,
                                                                                          143)
            try:
                self.end("KILLED" if stopped else "FAILED")
            except Exception:  # never hide the run's own error behind the tracker's
                pass
        return False


def _param_value(value: Any) -> str:
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _resumed(client: Any, run_dir: Path, uri: str
             ) -> tuple[str | None, dict, tuple[str, str] | None]:
    """The run id of ``run_dir/mlflow.json`` and its parameters, when it is in store ``uri``,
    still there and this folder's own (it is set running again); ``(None, {}, (run id, other
    folder))`` when this folder is a copy of the run folder that owns that run (:meth:`MlflowRun
    .start`); else ``(None, {}, None)``."""
    try:
        saved = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
        if saved.get("tracking_uri") != uri:
            return None, {}, None
        run = client.get_run(saved["run_id"])
    except Exception:  # no file, a broken one, a run deleted from the store: a new run
        return None, {}, None
    here = str(Path(run_dir).resolve())
    owner = run.data.tags.get("bertkit.run_dir")
    if owner and owner != here:
        if _holds(Path(owner), run.info.run_id, uri):
            return None, {}, (run.info.run_id, owner)
        client.set_tag(run.info.run_id, "bertkit.run_dir", here)  # moved: the run follows
    client.update_run(run.info.run_id, status="RUNNING")
    return run.info.run_id, dict(run.data.params), None


def _holds(folder: Path, run_id: str, uri: str) -> bool:
    """Whether run folder ``folder`` still names MLflow run ``run_id`` of store ``uri``."""
    try:
        saved = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(saved, dict) and saved.get("run_id") == run_id \
        and saved.get("tracking_uri") == uri


def _write_run_file(run_dir: Path, data: dict[str, str]) -> None:
    from bertkit.io import write_text

    write_text(Path(run_dir) / RUN_FILE, json.dumps(data, indent=2) + "\n")


def start_tracking(cfg: Any, run_dir: Path, settings: dict[str, Any], command: str,
                   console: Any = None) -> MlflowRun | None:
    """The command's :class:`MlflowRun` when ``cfg.report_to`` is ``mlflow`` (else None):
    ``settings`` as its parameters, ``cfg``'s settings-source line as a tag; says where on
    ``console`` (a rich console, optional). Call on the main process only.

    Raises:
        BertkitError: see :meth:`MlflowRun.start`.
    """
    if getattr(cfg, "report_to", "none") != "mlflow":
        return None
    from bertkit.settings.layers import sources_line

    tracker = MlflowRun.start(Path(run_dir), settings, command, resume=bool(cfg.resume),
                              sources=sources_line(cfg))
    if console is not None:
        branched = tracker.branched_from
        note = (f" (a new run: this folder is a copy of {branched[1]}, whose MLflow run "
                f"{branched[0]} it branches from)") if branched else ""
        console.print(f"mlflow: run {tracker.run_id} in {tracker.tracking_uri}{note}",
                      highlight=False, markup=False)
    return tracker
