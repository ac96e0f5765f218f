"""Where jobs run: processes on this machine, or a Slurm job array through submitit.

A caller (the bench stage runner, ``predict --shards``) hands an executor a list of jobs and a
``finished(index, Outcome)`` callback, called in the caller's thread as each job ends; it does
not know where they ran. Two executors:

- :class:`Processes` (``--executor local``): ``N`` jobs side by side in this process's threads,
  each job a child process; Ctrl-C reaches each child (it checkpoints and stops).
- :class:`Submitit` (``--executor slurm``, ``submitit-local``): the jobs as one job array through
  submitit (Rapin et al., *submitit*, facebookincubator, 2020: pickled callables, sbatch array
  files, per-job logs in its folder); ``submitit-local`` runs the same pickled jobs as processes
  of this machine (submitit's ``LocalExecutor``), a trial of a cluster run without Slurm.

The options are declared once (:data:`bertkit.settings.options.EXECUTOR_OPTIONS`), held by
:class:`ExecutorSettings` and recorded in the run folder (:func:`record`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bertkit.errors import BertkitError
from bertkit.io import write_json
from bertkit.settings.options import EXECUTOR_OPTIONS

_DECLARED = {o.name: o for o in EXECUTOR_OPTIONS}


def _declared(name: str):
    opt = _DECLARED[name]
    return field(default=opt.default, metadata={"option": opt})


@dataclass(kw_only=True)
class ExecutorSettings:
    """Where and how jobs run (:data:`bertkit.settings.options.EXECUTOR_OPTIONS`; ``slurm_*`` are sbatch's
    resources per job: minutes, GB, cores, GPUs)."""

    executor: str = _declared("executor")
    slurm_partition: str | None = _declared("slurm_partition")
    slurm_account: str | None = _declared("slurm_account")
    slurm_gpus_per_job: int = _declared("slurm_gpus_per_job")
    slurm_cpus_per_job: int = _declared("slurm_cpus_per_job")
    slurm_mem_gb: int | None = _declared("slurm_mem_gb")
    slurm_time: int = _declared("slurm_time")
    slurm_max_running: int = _declared("slurm_max_running")


def executor_settings(values: dict[str, Any]) -> ExecutorSettings:
    """The :class:`ExecutorSettings` among ``values`` (a command's options; others ignored,
    None: the declared default)."""
    names = {f.name for f in dataclasses.fields(ExecutorSettings)}
    return ExecutorSettings(**{k: v for k, v in values.items() if k in names and v is not None})


def submitit_parameters(s: ExecutorSettings, name: str) -> dict[str, Any]:
    """The parameters of ``submitit.AutoExecutor.update_parameters`` for ``s`` (``name``: the
    jobs' Slurm name). The ``slurm_`` ones are Slurm's only (submitit-local ignores them)."""
    params = {"name": name, "timeout_min": s.slurm_time, "cpus_per_task": s.slurm_cpus_per_job,
              "tasks_per_node": 1, "nodes": 1, "slurm_array_parallelism": s.slurm_max_running}
    if s.slurm_gpus_per_job:  # none asked: no --gpus-per-node=0 (refused where GPUs are no gres)
        params["gpus_per_node"] = s.slurm_gpus_per_job
    if s.slurm_mem_gb is not None:
        params["mem_gb"] = s.slurm_mem_gb
    if s.slurm_partition:
        params["slurm_partition"] = s.slurm_partition
    if s.slurm_account:
        params["slurm_account"] = s.slurm_account
    return params


def require(executor: str) -> None:
    """Check that ``executor`` can run here, before anything is written or submitted.

    Raises:
        BertkitError: submitit not installed, or (slurm) ``sbatch``/``srun`` not on PATH;
            the message names what is missing and the local alternative.
    """
    if executor == "local":
        return
    missing = []
    try:
        import submitit  # noqa: F401
    except ImportError:
        missing.append("the submitit package (pip install 'bertkit[slurm]')")
    if executor == "slurm":
        tools = [t for t in ("sbatch", "srun") if shutil.which(t) is None]
        if tools:
            missing.append(" and ".join(tools) + " not on PATH (not a Slurm login node?)")
    if missing:
        raise BertkitError(f"--executor {executor} cannot run here: " + "; ".join(missing),
                           expected="run on a Slurm login node with submitit installed, or "
                                    "--executor local to run the jobs on this machine")


def record(folder: Path, s: ExecutorSettings, name: str) -> None:
    """Write ``folder/executor.json``: the executor, its options and submitit's folder."""
    write_json(folder / "executor.json",
               {"executor": s.executor, "options": dataclasses.asdict(s),
                "submitit": submitit_parameters(s, name) if s.executor != "local" else None,
                "folder": "submitit" if s.executor != "local" else None})


STOPPED = (130, 143, -2, -15)
"""A command's exit codes when it was stopped (SIGINT, SIGTERM: bertkit's or the signal's)."""


@dataclass
class Outcome:
    """How a job ended: the command's exit ``code`` (None: the job itself failed or was killed
    before the command ended; ``note`` says why), its ``seconds``."""

    code: int | None
    seconds: float = 0.0
    note: str = ""


@dataclass
class Job:
    """One command (``argv``), its output into ``log``, ``env`` added to the environment. Picklable:
    it runs in a thread of :class:`Processes` or in a submitit job. Its state is written beside the
    log (``LOG.job.json``: submitted, running with host, pid and job id, ended with its exit code)
    for ``bench status``."""

    label: str
    argv: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    append: bool = False
    folder: str | None = None  # submitit's, where it runs as a submitit job

    @property
    def state_file(self) -> Path:
        """``LOG.job.json``: where the job stands (:meth:`mark`, :func:`job_state`)."""
        return self.log.with_suffix(".job.json")

    def mark(self, state: str, **more: Any) -> None:
        """Write the state file: ``state`` (submitted, running, ended), this host, the time
        (seconds since the epoch) and ``more`` (job id, pid, exit code, submitit's folder)."""
        write_json(self.state_file, {"state": state, "host": socket.gethostname(),
                                     "time": time.time(), **more})

    def __call__(self, started: Callable[[subprocess.Popen], None] | None = None) -> Outcome:
        """Run the command; ``started(process)`` once it has begun. A Ctrl-C or SIGTERM of this
        process is passed on to the command (it checkpoints and stops)."""
        start, job_id = time.time(), _job_id()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "a" if self.append else "w", encoding="utf-8") as fh:
            proc = subprocess.Popen(self.argv, stdout=fh, stderr=subprocess.STDOUT,
                                    env={**os.environ, **self.env})
            self.mark("running", pid=proc.pid, job_id=job_id, folder=self.folder,
                      executor=os.environ.get("SUBMITIT_EXECUTOR"))
            if started is not None:
                started(proc)
            try:
                code = proc.wait()
            except KeyboardInterrupt:  # a stopped submitit job: the command stops with it
                proc.send_signal(signal.SIGINT)
                code = proc.wait()
                self.mark("ended", exit=code, job_id=job_id, argv=self.argv, started=start)
                raise
        self.mark("ended", exit=code, job_id=job_id, argv=self.argv, started=start)
        return Outcome(code, round(time.time() - start, 1))


def job_state(state_file: Path) -> dict | None:
    """A job's state file (:meth:`Job.mark`), None where there is none or it cannot be read."""
    try:
        state = json.loads(Path(state_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def ran_before(job: Job, ignore: tuple[str, ...] = ()) -> Outcome | None:
    """The outcome of an earlier run of ``job`` that ended well (exit 0) but whose caller
    stopped before it took the result (a ``bench run`` killed while its Slurm jobs went on):
    the same command (less the arguments in ``ignore``), every file it names older than its
    start. None where there is none.
    """
    state = job_state(job.state_file)
    if state is None or state.get("state") != "ended" or state.get("exit") != 0:
        return None
    argv, started = state.get("argv"), state.get("started")
    if not isinstance(argv, list) or not isinstance(started, (int, float)) or \
            [a for a in argv if a not in ignore] != [a for a in job.argv if a not in ignore]:
        return None
    for arg in job.argv:
        if os.path.isfile(arg) and os.path.getmtime(arg) > started:
            return None  # changed since (a recipe written again)
    return Outcome(0, round(state.get("time", started) - started, 1), "ran before")


def alive(state: dict) -> bool:
    """Whether the job of ``state`` (:func:`job_state`) may still run: submitted or running,
    and neither ended in submitit's files (its result pickle; Slurm's ``sacct`` where it is on
    PATH) nor, on this machine, a process gone. Unknown (another machine, no sacct): True."""
    if state.get("state") not in ("submitted", "running"):
        return False
    job_id, folder, kind = state.get("job_id"), state.get("folder"), state.get("executor")
    if job_id and folder:
        if Path(folder, f"{job_id}_0_result.pkl").exists():
            return False
        if kind == "slurm" and shutil.which("sacct"):
            try:
                import submitit

                return not submitit.SlurmJob(folder, str(job_id)).done(force_check=True)
            except Exception:  # sacct's own trouble: unknown
                return True
    pid = state.get("pid")
    if pid is None and kind in ("local", "submitit-local") and str(job_id).isdigit():
        pid = int(job_id)  # a submitit-local job not yet running: its controller's process
    if state.get("host") == socket.gethostname() and isinstance(pid, int):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return True


def refuse_running(jobs: list) -> None:
    """Refuse to start jobs whose earlier job may still run (another ``bench run`` into the
    folder, or a cluster job still queued): two would write one run folder.

    Raises:
        BertkitError: naming each such job, its job id or process, and what to do.
    """
    busy = []
    for job in jobs:
        state = job_state(job.state_file) if isinstance(job, Job) else None
        if state is not None and alive(state):
            busy.append(f"{job.label} (job {state.get('job_id')})" if state.get("job_id")
                        else f"{job.label} (pid {state.get('pid')} on {state.get('host')})")
    if busy:
        raise BertkitError("still submitted or running from an earlier run: " + ", ".join(busy),
                           expected="wait for them (bertkit bench status), or cancel them "
                                    "(scancel JOB, kill PID) and run again")


def _job_id() -> str | None:
    """The submitit job id of this process (``ARRAY_TASK`` in a Slurm array), None outside one."""
    if not os.environ.get("SUBMITIT_EXECUTOR"):
        return None
    try:
        import submitit

        return str(submitit.JobEnvironment().job_id)
    except (ImportError, RuntimeError, KeyError):
        return None


Finished = Callable[[int, Outcome], None]
"""``finished(index of the job, its outcome)``; a KeyboardInterrupt it raises stops every job."""


class Processes:
    """``--executor local``: ``jobs`` commands side by side, each a child process of this one."""

    name = "local"

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.running: dict[int, subprocess.Popen] = {}
        self.lock = threading.Lock()
        self.stopping = False

    def _one(self, index: int, job: Job) -> Outcome | None:
        if self.stopping:  # stopping: start no other
            return None

        def started(proc):
            with self.lock:
                self.running[index] = proc
        try:
            ended = job(started)
            if ended.code in STOPPED:  # stopped from outside: start no other (the caller's
                self.stopping = True  # ``finished`` decides whether the run stops)
            return ended
        finally:
            with self.lock:
                self.running.pop(index, None)

    def stop(self) -> None:
        """Pass a Ctrl-C on to every running command (each checkpoints and stops)."""
        self.stopping = True
        with self.lock:
            for proc in self.running.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)

    def run(self, jobs: list[Job], finished: Finished) -> None:
        """Run ``jobs``, ``self.jobs`` at a time; ``finished`` as each ends.

        Raises:
            KeyboardInterrupt: Ctrl-C, or raised by ``finished``: every command was stopped.
        """
        refuse_running(jobs)
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            pending = {pool.submit(self._one, i, job): i for i, job in enumerate(jobs)}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED, timeout=1.0)
                    for fut in done:
                        i, ended = pending.pop(fut), fut.result()
                        if ended is not None:
                            finished(i, ended)
            except KeyboardInterrupt:
                self.stop()
                for fut in pending:
                    fut.cancel()
                wait(pending)
                raise


class Submitit:
    """``--executor slurm`` or ``submitit-local``: the jobs through submitit, their pickles,
    sbatch files and logs in ``folder`` (``submitit/`` of the run folder). Slurm gets the
    whole array at once (``--array=0-N%K``); submitit-local keeps K processes going."""

    def __init__(self, s: ExecutorSettings, folder: Path, name: str, poll: float | None = None):
        self.settings, self.folder, self.name = s, Path(folder), s.executor
        self.parameters = submitit_parameters(s, name)
        self.poll = poll if poll is not None else (30.0 if s.executor == "slurm" else 0.5)
        self.threads = s.slurm_cpus_per_job

    def executor(self):
        """The ``submitit.AutoExecutor`` with :func:`submitit_parameters`."""
        import submitit

        cluster = "slurm" if self.name == "slurm" else "local"
        ex = submitit.AutoExecutor(folder=self.folder, cluster=cluster)
        ex.update_parameters(**self.parameters)
        return ex

    def submit(self, jobs: list[Job], ex=None) -> list:
        """Submit ``jobs`` as one array; returns submitit's job handles (each job's state file
        says ``submitted`` with its job id).

        Raises:
            BertkitError: the submission failed (sbatch's message).
        """
        ex = ex or self.executor()
        for job in jobs:
            if isinstance(job, Job):
                job.folder = str(self.folder)
        asked = time.time()
        try:
            handles = ex.submit_array(jobs)
        except Exception as exc:  # submitit's FailedSubmissionError, sbatch's own error
            raise BertkitError(f"submitting {len(jobs)} job(s) to {self.name} failed: {exc}",
                               file=self.folder, expected="sbatch to accept the array (its "
                               "options: --slurm-partition, --slurm-time, ...)") from None
        for job, handle in zip(jobs, handles):
            if isinstance(job, Job) and not _newer(job.state_file, asked):  # not once it runs
                job.mark("submitted", job_id=str(handle.job_id), folder=str(self.folder),
                         executor=self.name)
        return handles

    def run(self, jobs: list[Job], finished: Finished) -> None:
        """Submit ``jobs`` and wait; ``finished`` as each ends (a job that failed, was killed or
        preempted: ``Outcome(None, note=...)``).

        Raises:
            KeyboardInterrupt: Ctrl-C, or raised by ``finished``: every job not done is
                cancelled (scancel), its work left for the next run.
            BertkitError: the submission failed.
        """
        if not jobs:
            return
        refuse_running(jobs)
        ex = self.executor()
        window = len(jobs) if self.name == "slurm" else self.settings.slurm_max_running
        waiting = list(enumerate(jobs))
        active: dict[int, Any] = {}
        try:
            while waiting or active:
                if waiting and len(active) < window:
                    batch, waiting = waiting[:window - len(active)], waiting[window - len(active):]
                    for (i, _), handle in zip(batch, self.submit([j for _, j in batch], ex)):
                        active[i] = handle
                for i, handle in list(active.items()):
                    if handle.done():
                        del active[i]
                        ended = outcome(handle)
                        if ended.code in STOPPED:  # scancel, preemption, --slurm-time: this
                            # job's alone, not a Ctrl-C of the whole run
                            ended = Outcome(None, ended.seconds, f"job {handle.job_id} stopped "
                                            f"(exit {ended.code}: cancelled, preempted or past "
                                            "its time limit)")
                        finished(i, ended)
                if active:
                    time.sleep(self.poll)
        except KeyboardInterrupt:
            for handle in active.values():
                handle.cancel(check=False)
            raise


def _newer(state_file: Path, since: float) -> bool:
    """Whether ``state_file`` was written at or after ``since`` (by the job itself)."""
    state = job_state(state_file)
    return state is not None and state.get("time", 0) >= since


def outcome(handle) -> Outcome:
    """The :class:`Outcome` of a done submitit job: what :class:`Job` returned, else (the job
    failed, was killed or preempted) ``code`` None with submitit's reason and its log."""
    try:
        result = handle.result()
    except Exception as exc:  # submitit's UncompletedJobError / FailedJobError
        reason = str(exc).strip().splitlines()
        return Outcome(None, note=f"job {handle.job_id} ended unfinished ("
                       f"{reason[0] if reason else type(exc).__name__}; its log: "
                       f"{handle.paths.stderr})")
    if isinstance(result, Outcome):
        return result
    return Outcome(0 if result is None else 1, note="" if result is None else str(result))


def make(s: ExecutorSettings, folder: Path, name: str, jobs: int = 1):
    """The executor ``s`` names (checked by :func:`require`): :class:`Processes` running
    ``jobs`` at a time, or :class:`Submitit` with its files under ``folder/submitit``.

    Raises:
        BertkitError: it cannot run here (:func:`require`).
    """
    require(s.executor)
    if s.executor == "local":
        return Processes(jobs)
    return Submitit(s, Path(folder) / "submitit", name)
