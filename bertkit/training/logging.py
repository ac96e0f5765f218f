"""Metrics logging (``metrics.jsonl``, one JSON object a line) and the rich progress display."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from bertkit.io import write_text


class MetricsLog:
    """Appends records to ``path`` (JSON lines), flushed after each, so a killed run keeps its log.

    Args:
        path: the ``metrics.jsonl`` file, or None to log nowhere (non-main processes).
        keep_until_step: on resume, drop records after this optimiser step (they are redone).
        tensorboard: also write each numeric field as a TensorBoard scalar (``train/loss``,
            ``dev/f1``, ...) to event files in ``path``'s folder.
        mlflow: also log each record with a step to this MLflow run
            (:class:`~bertkit.training.tracking.MlflowRun`, same names as TensorBoard's).
        own: that run when the log opened it (:func:`open_metrics_log`): an error leaving
            the ``with`` block ends it failed, :meth:`finish_tracking` ends it finished.

    As a context manager it closes on exit.

    Raises:
        BertkitError: ``tensorboard`` asked for but the ``tensorboard`` package is missing.
    """

    def __init__(self, path: Path | None, keep_until_step: int | None = None,
                 tensorboard: bool = False, mlflow: Any = None, own: Any = None) -> None:
        self.path = path
        self._writer = None
        self._mlflow = mlflow if path is not None else None
        self._own = own
        if tensorboard and path is not None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                from bertkit.errors import BertkitError

                raise BertkitError("--report-to tensorboard needs the tensorboard package",
                                   expected="pip install tensorboard") from None
            self._writer = SummaryWriter(log_dir=str(path.parent / "tensorboard"))
        self.start = time.time()
        if path is not None and keep_until_step is not None and path.exists():
            kept = [line for line in path.read_text(encoding="utf-8").splitlines()
                    if line.strip() and json.loads(line).get("step", 0) <= keep_until_step]
            write_text(path, "".join(line + "\n" for line in kept))
        self._handle = path.open("a", encoding="utf-8") if path is not None else None

    def log(self, record: dict[str, Any]) -> None:
        """Write one record (a ``time_s`` field, seconds since the log opened, is added)."""
        if self._handle is None:
            return
        record = {**record, "time_s": round(time.time() - self.start, 3)}
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        if self._writer is not None and "step" in record:
            group = record.get("split") or record.get("type", "train")
            for key, value in record.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in (
                        "step", "epoch", "time_s"):
                    self._writer.add_scalar(f"{group}/{key}", value, record["step"])
            self._writer.flush()
        if self._mlflow is not None:
            self._mlflow.log_record(record)

    def __enter__(self) -> MetricsLog:
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        self.close()
        if exc is not None and self._own is not None:
            self._own.__exit__(kind, exc, tb)  # FAILED, or KILLED for a stopped run
        return False

    def finish_tracking(self, run_dir: Path) -> None:
        """End the MLflow run this log opened (with ``curves.png``); nothing otherwise."""
        if self._own is not None:
            self._own.finish(run_dir)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def open_metrics_log(cfg: Any, out: Any, keep_until_step: int | None, tracker: Any = None,
                     console: Console | None = None) -> MetricsLog:
    """The run's :class:`MetricsLog` (``metrics.jsonl``; a log to nowhere off the main process)
    with TensorBoard or MLflow as ``cfg.report_to`` says.

    Args:
        cfg: the run's settings (a :class:`~bertkit.training.config.TrainConfig`).
        out: the run's :class:`~bertkit.training.rundir.RunWriter`.
        keep_until_step: on resume, the checkpoint's step (later records are dropped).
        tracker: the caller's open :class:`~bertkit.training.tracking.MlflowRun`; None with
            ``report_to == "mlflow"``: the log opens one itself (``cfg`` as its parameters,
            tag ``bertkit.command: train``), ended by :meth:`MetricsLog.finish_tracking`.

    Raises:
        BertkitError: a missing tensorboard or mlflow package, an unreachable MLflow store.
    """
    if not out.main:
        return MetricsLog(None)
    own = None
    if cfg.report_to == "mlflow" and tracker is None:  # train() called alone
        from bertkit.settings.layers import to_dict
        from bertkit.training.tracking import start_tracking

        tracker = own = start_tracking(cfg, out.root, to_dict(cfg), "train", console)
    return MetricsLog(out.path("metrics.jsonl"), keep_until_step,
                      tensorboard=cfg.report_to == "tensorboard", mlflow=tracker, own=own)


def make_progress(console: Console | None = None, disable: bool = False) -> Progress:
    """A progress bar with step count, throughput (set in the ``rate`` field), elapsed time and ETA;
    disabled without a console or where the console is not a terminal (into a file or pipe rich
    could not redraw it and would print it once, at the end, after the run's own lines)."""
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"),
        TimeRemainingColumn(), console=console, transient=False,
        disable=disable or console is None or not console.is_terminal,
    )


PLAIN_INTERVAL_S = 30.0  # seconds between two plain progress lines (PlainProgress)


class PlainProgress:
    """Plain progress lines for a console that is not a terminal (output into a file or pipe),
    where :func:`make_progress` draws nothing: one line every ``interval`` seconds of the run,
    checked after each optimiser step, e.g. ``step 150/1170 (epoch 1/3): loss 0.4120, 812.3
    ex/s, elapsed 1:05, ETA 7:20``. The losses are the means over the batches since the last
    ``metrics.jsonl`` record, ex/s the pace over the same window; the ETA (training only, not the
    final scoring) assumes the remaining steps take the mean time per step since the start.

    Args:
        console: where the lines go; None or a terminal console: print nothing.
        total_steps: the run's optimiser steps; ``start_step``: where it starts (a resume).
        n_epochs: the run's epochs, for the ``epoch e/n`` part.
        interval: seconds between two lines (None: ``PLAIN_INTERVAL_S``, 30).
    """

    def __init__(self, console: Console | None, total_steps: int, n_epochs: int,
                 start_step: int = 0, interval: float | None = None) -> None:
        self.console = console if console is not None and not console.is_terminal else None
        self.total, self.n_epochs, self.start_step = total_steps, n_epochs, start_step
        self.interval = PLAIN_INTERVAL_S if interval is None else interval
        self.start = self.last = time.monotonic()

    def update(self, step: int, epoch: int, meter: Any) -> str | None:
        """After optimiser step ``step`` of epoch ``epoch`` (1-based): print (and return) a line
        if ``interval`` seconds have passed since the last one (or the start); None otherwise.
        ``meter`` (a :class:`~bertkit.training.state.Meter`) gives ``means()``, the mean losses
        by name (``loss``, ``mlm_loss``, ...), and ``rate()``, examples/s; read only when a line
        is due."""
        if self.console is None:
            return None
        now = time.monotonic()
        if now - self.last < self.interval:
            return None
        self.last = now
        elapsed, done = now - self.start, step - self.start_step
        eta = _clock(elapsed / done * (self.total - step)) if done > 0 else "?"
        shown = "".join(f"{k} {v:.4f}, " for k, v in meter.means().items() if k.endswith("loss"))
        text = (f"step {step}/{self.total} (epoch {epoch}/{self.n_epochs}): {shown}"
                f"{meter.rate():.1f} ex/s, elapsed {_clock(elapsed)}, ETA {eta}")
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)
        return text


class StepProgress:
    """The run's progress display, advanced once per optimiser step: the bar of
    :func:`make_progress` on a terminal, else a :class:`PlainProgress` line every 30 s.

    Args:
        console: where it shows (None, as off the main process: nothing).
        total_steps, n_epochs, start_step: as :class:`PlainProgress`'s.

    As a context manager it draws the bar (from ``start_step``) until exit.
    """

    def __init__(self, console: Console | None, total_steps: int, n_epochs: int,
                 start_step: int = 0) -> None:
        self.bar = make_progress(console)
        self.plain = PlainProgress(console, total_steps, n_epochs, start_step=start_step)
        self.task = None

    def __enter__(self) -> "StepProgress":
        self.bar.__enter__()
        self.task = self.bar.add_task("train", total=self.plain.total,
                                      completed=self.plain.start_step, rate="")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def update(self, step: int, epoch: int, meter: Any) -> None:
        """After optimiser step ``step`` of epoch ``epoch`` (1-based): advance the bar with
        ``meter``'s examples/s and print a plain line if one is due."""
        self.bar.update(self.task, advance=1, rate=f"{meter.rate():.1f} ex/s")
        self.plain.update(step, epoch, meter)


def _clock(seconds: float) -> str:
    """``h:mm:ss`` or ``m:ss``."""
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
