"""``bertkit bench run``: every (encoder, task, seed) a stage with its own result file.

Layout of a results folder ``OUT``::

    bench.json                          the suite, budget, protocol, encoders (fingerprints)
    stages/ENC/TASK/seed-N.json         a finished stage: settings, sources, scores, timing
    stages/ENC/TASK/seed-N.items.npz    its per-test-item statistics (the paired bootstrap's
                                        input, kept with the result so a moved or committed
                                        results folder still tests without its runs/)
    stages/ENC/TASK/grid-lrX.json       a dev-grid point (protocol dev-grid)
    runs/ENC/TASK/seed-N/               the fine-tuning run (results.json, test predictions,
                                        config.yaml; model/ and checkpoints/ removed once done)
    runs/ENC/TASK/seed-N.yaml, .log     the stage's recipe and its command's output

A stage runs ``python -m bertkit finetune TASK --recipe seed-N.yaml -o seed-N``, one job of the
executor (:mod:`bertkit.jobs.executors`; the runner does not know which): a subprocess of this one
(``--executor local``: ``--jobs`` runs several side by side with ``OMP_NUM_THREADS`` each, and
Ctrl-C reaches each child, which checkpoints and stops), or one job of a Slurm array through
submitit (``--executor slurm``; its files in ``OUT/submitit``, the options in
``OUT/executor.json``; ``seed-N.job.json`` beside the log says where the job stands). Its
result file is written atomically only when the run has finished, so a stopped suite (or a
failed, killed or preempted job) leaves nothing half-written. A rerun keeps finished stages whose
stored settings and encoder match, by the one rule of stage runs
(:mod:`bertkit.workflows.stages`), and whose task metric and data (the split files' sizes and
hashes) match (else it refuses, naming the difference, before anything trains); a started,
unfinished stage starts again, or continues from its checkpoint with ``--resume``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertkit.bench.changes import (refuse_changed, refuse_other_tasks_changed,
                                   split_fingerprints)
from bertkit.bench.encoders import Encoder
from bertkit.bench.floors import collapse_warning
from bertkit.bench.manifest import (LITE_NOTE, check_manifest, load_manifest, load_stage,
                                    manifest, portable)
from bertkit.bench.declarations import suite_metric
from bertkit.bench.stage_settings import check_suite_settings, recipe_text, suite_stage_settings
from bertkit.bench.suite import Suite, SuiteTask, task_settings
from bertkit.errors import BertkitError
from bertkit.jobs.executors import STOPPED, ExecutorSettings, Job, Outcome, make, ran_before
from bertkit.jobs.executors import record as record_executor
from bertkit.io import write_json, write_text
from bertkit.workflows.stages import recorded_stage, settings_changes

WAY_FORWARD = "the same suite, budget and encoder, or another -o folder"
"""What a finished stage stored with other settings is refused with (the one rule)."""


@dataclass
class Stage:
    """One fine-tuning run of the suite: ``kind`` "seed" (a reported run) or "grid" (a dev-grid
    point, seed = the suite's first seed, ``overrides`` the grid value)."""

    encoder: Encoder
    task: SuiteTask
    seed: int
    kind: str = "seed"
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def stem(self) -> str:
        if self.kind == "grid":
            return "grid-" + "-".join(f"{k}{v:g}" if isinstance(v, float) else f"{k}{v}"
                                      for k, v in self.overrides.items())
        return f"seed-{self.seed}"

    def where(self, out: Path) -> tuple[Path, Path, Path]:
        """(result file, run directory, recipe file)."""
        rel = Path(self.encoder.name) / self.task.name
        return (out / "stages" / rel / f"{self.stem}.json", out / "runs" / rel / self.stem,
                out / "runs" / rel / f"{self.stem}.yaml")

    def label(self) -> str:
        return f"{self.encoder.name}/{self.task.name}/{self.stem}"


def stage_recipe(suite: Suite, stage: Stage, budget: str) -> dict[str, Any]:
    """The stage's settings layer: the suite's (defaults, task recipe, lite caps), the grid
    value, the data set, the encoder and the seed."""
    return {**task_settings(suite, stage.task, budget), **stage.overrides,
            "data": stage.task.data, "model": stage.encoder.path, "seed": stage.seed}


class StageStopped(BertkitError):
    """A stage's fine-tune was stopped from outside the runner (``kill -INT`` or ``-TERM`` of
    the child): the runner stops every stage, as for its own Ctrl-C, instead of counting a
    failure and starting the next."""


def _or_nan(value: Any) -> float:
    """A dev score as a float; NaN where there is none or it is undefined (None)."""
    return float("nan") if value is None else float(value)


def item_statistics(spec, run_dir: Path, results: dict):
    """The metric's per-test-item statistics ``[N, K]`` of a finished run (None where the metric
    has no reader or the predictions cannot be read)."""
    if spec.stats is None:
        return None
    try:
        return spec.stats(run_dir, results)
    except (OSError, ValueError, KeyError):
        return None


def save_items(path: Path, items) -> None:
    """Write the ``[N, K]`` statistics atomically (compressed ``.npz``, key ``items``)."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one stage writes it; umask modes
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, items=np.asarray(items))
    os.replace(tmp, path)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: ``taskset``, a container's or a
    scheduler's cpuset), else ``os.cpu_count()``."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def env_threads() -> int | None:
    """``OMP_NUM_THREADS`` as a positive integer where the environment sets one, else None: a
    bench run gives each job that many threads (and, without ``--jobs``, runs as many jobs as
    the usable cores hold)."""
    text = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def _sigterm_as_interrupt():
    """Make SIGTERM (a scheduler's stop) act as Ctrl-C in the main thread; returns the previous
    handler (None off the main thread, where signals cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


class Runner:
    """Runs a suite's stages (see the module docstring). ``console``: a rich Console or None."""

    def __init__(self, suite: Suite, encoders: list[Encoder], out: Path, budget: str = "full",
                 protocol: str | None = None, seeds: list[int] | None = None, jobs: int = 0,
                 resume: bool = False, console=None, tasks: list[SuiteTask] | None = None,
                 executor_settings: ExecutorSettings | None = None):
        self.suite, self.encoders, self.out = suite, encoders, Path(out)
        self.tasks = tasks or suite.tasks  # --tasks: a part of the suite (bench.json keeps all)
        self.budget, self.protocol = budget, protocol or suite.protocol
        self.seeds = seeds or suite.seeds
        cores, asked = usable_cores(), env_threads()
        # per job: OMP_NUM_THREADS where the user set it, else the cores shared out (one thread
        # each at the default --jobs = cores)
        self.jobs = jobs or max(1, cores // (asked or 1))
        self.resume, self.console = resume, console
        # where the stages run (bertkit.jobs.executors): checked here, before anything is written
        self.executor_settings = executor_settings or ExecutorSettings()
        self.executor = make(self.executor_settings, self.out, f"bertkit-bench-{suite.name}",
                             self.jobs)
        self.threads = getattr(self.executor, "threads", None) or asked or \
            max(1, cores // self.jobs)
        self.data_prints: dict[tuple[str, str], dict] = {}  # data_files(): once per data set
        if self.protocol == "dev-grid" and not suite.grid:
            raise BertkitError(f"suite {suite.name} has no grid for protocol dev-grid",
                               file=suite.path, expected="a 'grid' key, e.g. {lr: [1e-4, 3e-4]}")

    # -- planning ---------------------------------------------------------------------------
    def data_files(self, task: SuiteTask) -> dict[str, dict]:
        """The fingerprints of the split files ``task`` reads (:func:`split_fingerprints`),
        taken once per run, before any stage trains."""
        key = (task.task, task.data)
        if key not in self.data_prints:
            self.data_prints[key] = split_fingerprints(*key)
        return self.data_prints[key]

    def grid_stages(self) -> list[Stage]:
        """The dev-grid points (protocol dev-grid), each on the first seed."""
        if self.protocol != "dev-grid":
            return []
        key, values = next(iter(self.suite.grid.items()))
        return [Stage(e, t, self.seeds[0], "grid", {key: v}) for e in self.encoders
                for t in self.tasks for v in values]

    def chosen(self, encoder: Encoder, task: SuiteTask) -> dict[str, Any]:
        """The grid value the encoder's dev score picked for the task ({} under fixed)."""
        if self.protocol != "dev-grid":
            return {}
        best, best_score = {}, -math.inf
        for stage in self.grid_stages():
            if stage.encoder.name == encoder.name and stage.task.name == task.name:
                done = load_stage(stage.where(self.out)[0])
                if done["dev_score"] > best_score:
                    best, best_score = stage.overrides, done["dev_score"]
        return dict(best)

    def seed_stages(self) -> list[Stage]:
        return [Stage(e, t, s, "seed", self.chosen(e, t)) for e in self.encoders
                for t in self.tasks for s in self.seeds]

    def prepared(self, stage: Stage) -> tuple[bool, dict, dict]:
        """Write the stage's recipe, build its settings; (finished already, settings, sources).

        Raises:
            SettingsChanged: a finished stage stored with other settings or another encoder
                (the one rule of :mod:`bertkit.workflows.stages`).
            BertkitError: a finished stage whose suite task (kind, metric) or data has changed
                since (:func:`bertkit.bench.changes.refuse_changed`).
        """
        result, run_dir, recipe = stage.where(self.out)
        layer = stage_recipe(self.suite, stage, self.budget)
        settings, sources = suite_stage_settings(self.suite, stage.task, layer)
        text = recipe_text(stage.task.task, layer)
        if not result.is_file():
            if not recipe.is_file() or recipe.read_text(encoding="utf-8") != text:
                write_text(recipe, text)
            return False, settings, sources
        recorded_stage(stage.label(), result, self.compared(stage, settings),
                       read=lambda path: self.scored(stage, path),
                       settings_of=lambda done: self.compared(stage, done.get("settings") or {},
                                                              done.get("fingerprint")),
                       finished=lambda done: True, way_forward=WAY_FORWARD,
                       notes={f"encoder {stage.encoder.name}": "other weights"})
        return True, settings, sources

    @staticmethod
    def compared(stage: Stage, settings: dict, fingerprint: str | None = None) -> dict:
        """What the one rule compares of a stage: its settings but the encoder's path, and the
        encoder's fingerprint (``fingerprint``: a record's; default the stage's own)."""
        return {**portable(settings),
                f"encoder {stage.encoder.name}": fingerprint or stage.encoder.fingerprint}

    def scored(self, stage: Stage, result: Path) -> dict:
        """A finished stage's record, refused when the suite's task or the data changed since it
        was scored (:func:`bertkit.bench.changes.refuse_changed`)."""
        done = load_stage(result)
        refuse_changed(stage.label(), done, stage.task, self.data_files(stage.task),
                       self.suite.path, result)
        return done

    # -- running ----------------------------------------------------------------------------
    def command(self, stage: Stage) -> list[str]:
        _, run_dir, recipe = stage.where(self.out)
        started = (run_dir / "config.yaml").is_file()
        how = ["--resume"] if self.resume and started and (run_dir / "checkpoints").is_dir() \
            else ["--overwrite"]
        return [sys.executable, "-m", "bertkit", "finetune", stage.task.task, "--recipe",
                str(recipe), "-o", str(run_dir), *how]

    def job(self, stage: Stage) -> Job:
        """The stage's command as a :class:`bertkit.jobs.executors.Job` (its output into
        ``seed-N.log``; a resumed stage's log goes on after the stopped part)."""
        recipe, cmd = stage.where(self.out)[2], self.command(stage)
        return Job(stage.label(), cmd, recipe.with_suffix(".log"),
                   {"OMP_NUM_THREADS": str(self.threads), "MKL_NUM_THREADS": str(self.threads),
                    "TOKENIZERS_PARALLELISM": "false"}, append="--resume" in cmd)

    def finish(self, stage: Stage, settings: dict, sources: dict, job: Job,
               ended: Outcome) -> dict:
        """Write the result file of a stage whose job ``ended``; returns it.

        Raises:
            StageStopped: its command was stopped from outside (``kill -INT``/``-TERM``).
            BertkitError: the command failed (its log named) or its job ended unfinished.
        """
        result, run_dir, _ = stage.where(self.out)
        log, cmd, code = job.log, job.argv, ended.code
        if code in STOPPED:  # stopped from outside (kill -INT/-TERM)
            raise StageStopped(f"stage {stage.label()} stopped (exit {code})", file=log)
        if code != 0:
            said = f"exit {code}" if code is not None else ended.note
            raise BertkitError(f"stage {stage.label()} failed ({said})", file=log,
                               expected="a finished run (its log says why not)")
        try:
            results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BertkitError(f"stage {stage.label()}: no readable results.json ({exc})",
                               file=log, expected="a finished run (its log says why not)") from None
        spec = suite_metric(stage.task.task, stage.task.metric)
        scale = spec.scale
        test, dev = results.get("test") or {}, results.get("dev") or {}
        if spec.key not in test:
            raise BertkitError(f"stage {stage.label()}: results.json has no test {spec.key!r}",
                               file=run_dir / "results.json",
                               expected=f"the task's score for metric {stage.task.metric}")
        if test[spec.key] is None:  # a correlation over constant gold: undefined, not 0
            raise BertkitError(f"stage {stage.label()}: test {spec.key} is undefined: "
                               f"{test.get('undefined', 'no value')}",
                               file=run_dir / "results.json",
                               expected=f"a test split the metric {stage.task.metric} can score")
        select = spec.key if spec.key in dev else results.get("select_metric")
        try:  # what --precision auto became on this machine (bf16 on AMX-BF16 CPUs, fp32 else)
            ran = json.loads((run_dir / "environment.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            ran = {}
        record = {"stage": stage.label(), "kind": stage.kind, "encoder": stage.encoder.name,
                  "model": stage.encoder.model, "fingerprint": stage.encoder.fingerprint,
                  "task": stage.task.name, "task_kind": stage.task.task,
                  "data": stage.task.data, "data_files": self.data_files(stage.task),
                  "metric": stage.task.metric, "seed": stage.seed,
                  "overrides": stage.overrides, "score": float(test[spec.key]) * scale,
                  "dev_score": float(_or_nan(dev.get(select))) * scale,
                  "test": {k: v for k, v in test.items() if isinstance(v, (int, float))},
                  "settings": settings, "sources": sources,
                  "run": run_dir.relative_to(self.out).as_posix(),
                  "command": "python " + " ".join(cmd[1:]),
                  "seconds": ended.seconds, "budget": self.budget,
                  "precision": ran.get("precision"), "device": ran.get("device"),
                  "collapse": collapse_warning(test)}
        items = item_statistics(spec, run_dir, results)
        if items is not None:
            record["items"] = result.with_suffix(".items.npz").name
            save_items(result.with_suffix(".items.npz"), items)
        for heavy in ("model", "checkpoints"):  # the scores and predictions stay
            shutil.rmtree(run_dir / heavy, ignore_errors=True)
        write_json(result, record)
        return record

    def check(self, stages: list[Stage]) -> list[tuple[Stage, dict, dict]]:
        """Every stage checked (:meth:`prepared`) before any runs; the unfinished ones."""
        todo = []
        for stage in stages:
            finished, settings, sources = self.prepared(stage)
            if not finished and not self.reused(stage, settings):
                todo.append((stage, settings, sources))
        return todo

    def reused(self, stage: Stage, settings: dict) -> bool:
        """Under dev-grid, the first seed at the chosen grid value is the grid point's own run
        (same settings, same seed): its result is copied to the seed stage instead of training
        it again (``reused`` names the grid stage). True if it was."""
        if stage.kind != "seed" or not stage.overrides or stage.seed != self.seeds[0]:
            return False
        grid = Stage(stage.encoder, stage.task, stage.seed, "grid", stage.overrides)
        path = grid.where(self.out)[0]
        if not path.is_file():
            return False
        done = load_stage(path)
        if settings_changes(self.compared(stage, done.get("settings") or {},
                                          done.get("fingerprint")),
                            self.compared(stage, settings)):
            return False
        write_json(stage.where(self.out)[0],
                   {**done, "stage": stage.label(), "kind": "seed", "reused": grid.label()})
        return True

    def run_batch(self, todo: list[tuple[Stage, dict, dict]], progress) -> list[str]:
        """Run the checked, unfinished stages on the executor; returns the failures."""
        failures: list[str] = []
        jobs = [self.job(stage) for stage, _, _ in todo]

        def finished(i: int, ended: Outcome) -> None:
            try:
                self.finish(*todo[i], jobs[i], ended)
                progress.finished()
            except StageStopped:  # a child stopped from outside: stop them all
                raise KeyboardInterrupt from None
            except BertkitError as exc:
                failures.append(str(exc))
                progress.failed(str(exc))

        again = [i for i, t in enumerate(todo) if not self.collected(t, jobs[i], progress)]
        self.executor.run([jobs[i] for i in again], lambda k, ended: finished(again[k], ended))
        return failures

    def collected(self, item: tuple[Stage, dict, dict], job: Job, progress) -> bool:
        """Whether the stage's job had finished in an earlier run that stopped before writing
        its result (a ``bench run`` killed while its Slurm jobs went on): the result is written
        now from the run's files, nothing trained again. False: it runs (again)."""
        earlier = ran_before(job, ignore=("--resume", "--overwrite"))
        if earlier is None:
            return False
        try:
            self.finish(*item, job, earlier)
        except BertkitError:  # its files do not make a result: trained again
            return False
        progress.finished()
        return True

    def run(self) -> dict:
        """Run the suite; returns ``{"finished", "kept", "failed"}`` counts.

        Raises:
            BertkitError: another bench run's folder, changed settings, failed stages (exit 1),
                or a stop (exit 130: rerun with ``--resume`` to continue).
        """
        bad = check_suite_settings(self.suite)  # either budget: a lite typo fails full too
        if bad:
            raise bad[0]
        new = manifest(self.suite, self.encoders, self.budget, self.protocol)
        check_manifest(self.out, new)
        grid = self.grid_stages()
        todo = self.check(grid if grid else self.seed_stages())
        refuse_other_tasks_changed(self.suite, self.tasks, self.out)
        old = self.out / "bench.json"
        if old.is_file():  # encoders of earlier runs into this folder stay listed
            before = load_manifest(old)["encoders"]
            new["encoders"] = {**before, **new["encoders"]}
        write_json(old, new)
        record_executor(self.out, self.executor_settings, f"bertkit-bench-{self.suite.name}")
        n_seed = len(self.encoders) * len(self.tasks) * len(self.seeds)
        previous = _sigterm_as_interrupt()
        try:
            return self._run_stages(grid, todo, n_seed)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    def _run_stages(self, grid: list[Stage], todo: list, n_seed: int) -> dict:
        from bertkit.bench.progress import Progress

        with Progress(self.suite.name, len(grid) + n_seed, self.console) as progress:
            progress.n_kept = (len(grid) if grid else n_seed) - len(todo)
            try:
                failures = self.run_batch(todo, progress)
                if grid:
                    if failures:
                        raise BertkitError("dev-grid stages failed: " + "; ".join(failures))
                    seeds = self.check(self.seed_stages())
                    progress.n_kept += n_seed - len(seeds)
                    failures = self.run_batch(seeds, progress)
            except KeyboardInterrupt:
                raise BertkitError(
                    f"stopped; finished stages are kept in {self.out}: run the same command "
                    "with --resume to continue", exit_code=130) from None
        if failures:
            raise BertkitError(f"{len(failures)} stage(s) failed: " + "; ".join(failures),
                               expected="fix the cause and rerun: finished stages are kept")
        return progress.counts()
