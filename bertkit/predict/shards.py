"""How a streaming ``predict`` runs: in this process, as ``--jobs N`` processes on this machine,
or as ``--shards N`` jobs of an executor (``--executor slurm|submitit-local``), each followed by
the merge of the shards (:mod:`bertkit.predict.merge`), all under the output's lock
(:func:`bertkit.predict.state.output_lock`).

The command line (``bertkit predict <task>``) checks the options with :func:`check_options`
before it loads a model (seconds), then hands the task's predictor to :func:`run`. A worker
process loads its own predictor through the ``load`` function it is given (a module-level
function, so that a spawned process can unpickle it).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path
from typing import Any, Callable

from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.settings.options import EXECUTOR_OPTIONS, SHARDS
from bertkit.predict.driver import (StreamOptions, StreamPredictor, parse_shard, shard_output,
                                      stream_predict)
from bertkit.predict.state import output_lock, state_path

STREAM_DEFAULTS = {"chunk_size": 2000, "resume": False, "shard": None, "jobs": 1,
                   **{o.name: o.default for o in (SHARDS, *EXECUTOR_OPTIONS)}}
"""The streaming options (:data:`bertkit.settings.options.STREAM_OPTIONS`, with where the shards run:
``--shards``, ``--executor``, ``--slurm-*``) and their defaults."""

Loader = Callable[[Console | None], StreamPredictor]
"""``load(console) -> predictor``: the task's predictor with its model loaded (a worker's own)."""


def check_options(stream: dict, output: Path | None) -> None:
    """The streaming options' own checks, made before a model is loaded (seconds): ``--shard``
    is I/N, ``--shard``/``--jobs``/``--resume`` need ``--output``, not ``--shard`` with ``--jobs``,
    and the executor's (:func:`_check_executor`).

    Args:
        stream: the options of :data:`STREAM_DEFAULTS`, as given.

    Raises:
        BertkitError: naming the option and what it needs.
    """
    shard = parse_shard(stream["shard"]) if stream["shard"] else None
    jobs = stream["jobs"]
    if (shard or jobs > 1 or stream["resume"]) and output is None:
        flag = "--shard" if shard else "--jobs" if jobs > 1 else "--resume"
        raise BertkitError(f"{flag} needs --output (standard output cannot be resumed or merged)",
                           expected="--output FILE")
    if shard and jobs > 1:
        raise BertkitError("--shard and --jobs together", expected="one of them: --jobs N runs "
                           "N shards on this machine; --shard I/N is one of N runs")
    _check_executor(stream, output)


def _check_executor(stream: dict, output: Path | None) -> None:
    """``--executor slurm|submitit-local [--shards N]``: with ``--output``, without ``--shard``
    or ``--jobs``, runnable here (:func:`bertkit.jobs.executors.require`); ``--shards`` needs one.

    Raises:
        BertkitError: naming the option and what it needs.
    """
    from bertkit.jobs.executors import require

    if stream["executor"] == "local":
        if stream["shards"] is not None:
            raise BertkitError("--shards needs --executor slurm or submitit-local",
                               expected="--executor slurm --shards N, or on this machine "
                                        "--jobs N")
        return
    given = "--shard" if stream["shard"] else "--jobs" if stream["jobs"] > 1 else \
        "no --output" if output is None else None
    if given:
        raise BertkitError(f"--executor {stream['executor']} with {given}",
                           expected="--executor with --shards N and --output FILE (the shards "
                                    "are its jobs)")
    require(stream["executor"])


def run(predictor: StreamPredictor, load: Loader, input: Path, output: Path | None,
        stream: dict, console: Console) -> None:
    """Stream ``input`` to ``output`` (None: standard output) as the options ``stream`` say:
    here with ``predictor``, as ``--jobs N`` local processes or as executor jobs (each loading
    its own predictor with ``load``), then the merge of their shards.

    Args:
        stream: the options of :data:`STREAM_DEFAULTS` (checked: :func:`check_options`) and
            ``skip_bad_lines``.

    Raises:
        BertkitError: from :func:`~bertkit.predict.driver.stream_predict` and the merge.
    """
    shard = parse_shard(stream["shard"]) if stream["shard"] else None
    opts = StreamOptions(stream["chunk_size"], stream["resume"], shard, stream["skip_bad_lines"])
    if stream["executor"] != "local":
        return _submit_shards(functools.partial(shard_work, load, str(input), str(output), opts),
                              stream, output, console, input)
    if stream["jobs"] > 1:
        return _run_jobs(functools.partial(shard_work, load, str(input), str(output), opts),
                         stream["jobs"], output, console, input)
    shard_work(load, str(input), output, opts, None, console, predictor)


def _run_jobs(work: Callable, jobs: int, output: Path, console: Console, input: Path) -> None:
    """``--jobs N``: N local processes, one shard each, then the merge, under the output's
    lock (the whole output, its shards and the merge: one run's)."""
    from bertkit.predict.merge import run_jobs

    console.print(f"predict: {jobs} processes, one thread each, then the merge", highlight=False)
    with output_lock(output):
        merged = run_jobs(work, jobs, output)
    _report_merged(console, merged, input, output)


def _submit_shards(work: Callable, stream: dict, output: Path, console: Console,
                   input: Path) -> None:
    """``--executor slurm|submitit-local --shards N``: the shards as one job array
    (:func:`bertkit.predict.cluster.run_shards`), then the merge, under the output's lock."""
    from bertkit.jobs.executors import executor_settings
    from bertkit.predict.cluster import run_shards
    from bertkit.predict.merge import merge_shards

    n = stream["shards"] or 1
    console.print(f"predict: {n} shard job(s) through {stream['executor']} (submitit's files: "
                  f"{output}.submitit), then the merge", highlight=False)
    with output_lock(output):
        run_shards(work, n, output, executor_settings(stream))
        merged = merge_shards(output)
    _report_merged(console, merged, input, output)


def _report_merged(console: Console, merged: dict, input: Any, output: Path) -> None:
    report_skipped(console, merged["skipped"], input)
    console.print(f"predict: merged {merged['shards']} shards into {output}", highlight=False)


def shard_work(load: Loader, input: str, output: Any, opts: StreamOptions,
               shard: tuple[int, int] | None = None, console: Console | None = None,
               predictor: StreamPredictor | None = None) -> None:
    """One streaming run (a shard of ``--jobs`` when ``shard`` is given and ``opts`` has none).
    Module-level, so that ``--jobs`` can hand it to a spawned process.

    Raises:
        BertkitError: from :func:`~bertkit.predict.driver.stream_predict`.
    """
    if shard is not None and opts.shard is None:  # a --jobs worker
        target = shard_output(output, shard)
        opts = dataclasses.replace(opts, shard=shard,
                                   resume=opts.resume and state_path(target).exists())
        console = Console(stderr=True, force_terminal=False) if console is None else console
    if opts.shard:
        output = shard_output(output, opts.shard)
    if predictor is None:  # a --jobs worker loads its own model
        predictor = load(console)
    summary = stream_predict(predictor, input, output if output is not None else sys.stdout,
                             opts, console)
    if console is not None:
        report_skipped(console, summary.skipped, input)
        if summary.output is not None:
            here = summary.records if summary.this_run is None else summary.this_run
            rate = here / summary.seconds if summary.seconds else 0.0
            resumed = f" (resumed: {here} this run, {summary.records} in all)" \
                if here != summary.records else ""
            console.print(f"predict: {here} {predictor.unit} in {summary.seconds:.1f} s "
                          f"({rate:.1f}/s){resumed} -> {summary.output}", highlight=False)


def report_skipped(console: Console, skipped: list, input: Any) -> None:
    """Say on ``console`` how many lines of ``input`` were skipped (``[line, reason]`` each),
    naming the first ten."""
    if skipped:
        lines = ", ".join(str(line) for line, _ in skipped[:10])
        more = f" and {len(skipped) - 10} more" if len(skipped) > 10 else ""
        console.print(f"[yellow]note:[/] skipped {len(skipped)} unreadable line"
                      f"{'s' if len(skipped) > 1 else ''} of {input}: {lines}{more}",
                      highlight=False)
