"""``bertkit predict <task>``: one command per registered task (:mod:`bertkit.tasks.registry`),
with the options the task declares (:class:`bertkit.settings.options.Commands`, built by
:mod:`bertkit.cli._tasks`), running the one shared body, :func:`predict_saved`; and
``bertkit predict merge``, which joins the shards of ``--shard I/N`` runs."""

from __future__ import annotations

import functools
import inspect
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from bertkit.cli._app import predict_app, user_errors
from bertkit.cli._tasks import inference_command, register_all
from bertkit.settings.options import EXECUTOR_OPTIONS, SHARDS

STREAM_DEFAULTS = {"chunk_size": 2000, "resume": False, "shard": None, "jobs": 1,
                   **{o.name: o.default for o in (SHARDS, *EXECUTOR_OPTIONS)}}
"""The streaming options (:data:`bertkit.settings.options.STREAM_OPTIONS`, with where the shards run:
``--shards``, ``--executor``, ``--slurm-*``) and their defaults."""


def predict_saved(task_name: str, model: str, input: Path, output: Path | None = None,
                  **kwargs: Any) -> str:
    """Run task ``task_name``'s ``predict`` (:mod:`bertkit.tasks.registry`) on ``input`` with the
    saved model ``model``; notes go to standard error, the predictions to ``output`` or, without
    one, to standard output. A task with a ``stream`` predictor runs through
    :func:`bertkit.predict.stream_predict` (chunks, ``--resume``, ``--shard``, ``--jobs``,
    ``--skip-bad-lines``); the others read, predict and write the whole input at once.

    Args:
        kwargs: the task's ``predict`` options (input_format, device, batch_size, ...) and,
            for a streaming task, the streaming options (:data:`STREAM_DEFAULTS`). A task's
            ``stream`` that takes ``output`` is given the output's name (``auto`` formats).

    Returns:
        the predictions' text (empty for a streaming task: it wrote them as it went).

    Raises:
        BertkitError: from the task's ``predict`` (unknown format, bad input, no saved model),
            or bad streaming options (``--shard`` not I/N, ``--jobs``/``--shard`` without
            ``--output``, both at once).
    """
    from bertkit.errors import BertkitError
    from bertkit.tasks.registry import get_task

    if str(input) != "-" and not Path(input).is_file():  # before the model is loaded (seconds)
        raise BertkitError(f"{input}: file not found" if not Path(input).exists()
                           else f"{input}: not a file (expected the input file to predict on)")
    task = get_task(task_name)
    console = Console(stderr=True)
    stream = {k: kwargs.pop(k, v) for k, v in STREAM_DEFAULTS.items()}
    _check_stream(stream, output)  # before the model is loaded
    if hasattr(task, "stream"):
        task_kwargs = {k: v for k, v in kwargs.items() if k != "skip_bad_lines"}
        if "output" in inspect.signature(task.stream).parameters:  # its format may follow it
            task_kwargs["output"] = str(output) if output is not None else None
        predictor = task.stream(model, str(input), console=console, **task_kwargs)
        if predictor is not None:
            stream["skip_bad_lines"] = kwargs.get("skip_bad_lines", False)
            _stream(task_name, model, input, output, stream, task_kwargs, console, predictor)
            return ""
    given = [k for k, v in stream.items() if v != STREAM_DEFAULTS[k]]
    if given:
        raise BertkitError(f"--{given[0].replace('_', '-')}: this input is read whole, not "
                           "streamed", file=Path(input),
                           expected="JSON lines or plain text (CSV/TSV is read whole)")
    text = task.predict(model, str(input), str(output) if output else None,
                        console=console, **kwargs)
    if output is None:
        typer.echo(text, nl=False)
    return text


def _check_stream(stream: dict, output: Path | None) -> None:
    """The streaming options' own checks, made before a model is loaded (seconds): ``--shard``
    is I/N, ``--shard``/``--jobs``/``--resume`` need ``--output``, not ``--shard`` with ``--jobs``.

    Raises:
        BertkitError: naming the option and what it needs.
    """
    from bertkit.errors import BertkitError
    from bertkit.predict import parse_shard

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
    from bertkit.errors import BertkitError
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


def _stream(task_name: str, model: str, input: Path, output: Path | None, stream: dict,
            kwargs: dict, console: Console, predictor: Any) -> None:
    from bertkit.predict import StreamOptions, parse_shard

    shard = parse_shard(stream["shard"]) if stream["shard"] else None
    jobs = stream["jobs"]
    opts = StreamOptions(stream["chunk_size"], stream["resume"], shard, stream["skip_bad_lines"])
    if stream["executor"] != "local":
        work = functools.partial(_shard_work, task_name, model, str(input), str(output), opts,
                                 kwargs)
        return _submit_shards(work, stream, output, console, input)
    if jobs > 1:
        from bertkit.predict.merge import run_jobs

        console.print(f"predict: {jobs} processes, one thread each, then the merge",
                      highlight=False)
        from bertkit.predict.state import output_lock

        with output_lock(output):  # the whole output, its shards and the merge: one run's
            merged = run_jobs(functools.partial(_shard_work, task_name, model, str(input),
                                                str(output), opts, kwargs), jobs, output)
        _report_skipped(console, merged["skipped"], input)
        console.print(f"predict: merged {merged['shards']} shards into {output}", highlight=False)
        return
    _shard_work(task_name, model, str(input), output, opts, kwargs, None, console, predictor)


def _submit_shards(work: Any, stream: dict, output: Path, console: Console, input: Path) -> None:
    """``--executor slurm|submitit-local --shards N``: the shards as one job array
    (:func:`bertkit.predict.cluster.run_shards`), then the merge, under the output's lock."""
    from bertkit.jobs.executors import executor_settings
    from bertkit.predict.cluster import run_shards
    from bertkit.predict.merge import merge_shards
    from bertkit.predict.state import output_lock

    n = stream["shards"] or 1
    console.print(f"predict: {n} shard job(s) through {stream['executor']} (submitit's files: "
                  f"{output}.submitit), then the merge", highlight=False)
    with output_lock(output):
        run_shards(work, n, output, executor_settings(stream))
        merged = merge_shards(output)
    _report_skipped(console, merged["skipped"], input)
    console.print(f"predict: merged {merged['shards']} shards into {output}", highlight=False)


def _shard_work(task_name: str, model: str, input: str, output: Any, opts: Any, kwargs: dict,
                shard: tuple[int, int] | None = None, console: Console | None = None,
                predictor: Any = None) -> None:
    """One streaming run (a shard of ``--jobs`` when ``shard`` is given and ``opts`` has none).
    Module-level, so that ``--jobs`` can hand it to a spawned process."""
    import dataclasses

    from bertkit.predict import shard_output, stream_predict
    from bertkit.predict.state import state_path
    from bertkit.tasks.registry import get_task

    if shard is not None and opts.shard is None:  # a --jobs worker
        target = shard_output(output, shard)
        opts = dataclasses.replace(opts, shard=shard,
                                   resume=opts.resume and state_path(target).exists())
        console = Console(stderr=True, force_terminal=False) if console is None else console
    if opts.shard:
        output = shard_output(output, opts.shard)
    if predictor is None:  # a --jobs worker loads its own model
        predictor = get_task(task_name).stream(model, input, console=console, **kwargs)
    summary = stream_predict(predictor, input, output if output is not None else sys.stdout,
                             opts, console)
    if console is not None:
        _report_skipped(console, summary.skipped, input)
        if summary.output is not None:
            here = summary.records if summary.this_run is None else summary.this_run
            rate = here / summary.seconds if summary.seconds else 0.0
            resumed = f" (resumed: {here} this run, {summary.records} in all)" \
                if here != summary.records else ""
            console.print(f"predict: {here} {predictor.unit} in {summary.seconds:.1f} s "
                          f"({rate:.1f}/s){resumed} -> {summary.output}", highlight=False)


def _report_skipped(console: Console, skipped: list, input: Any) -> None:
    if skipped:
        lines = ", ".join(str(line) for line, _ in skipped[:10])
        more = f" and {len(skipped) - 10} more" if len(skipped) > 10 else ""
        console.print(f"[yellow]note:[/] skipped {len(skipped)} unreadable line"
                      f"{'s' if len(skipped) > 1 else ''} of {input}: {lines}{more}",
                      highlight=False)


COMMANDS = register_all(predict_app, inference_command(predict_saved, "predict"))
"""``{task: command function}``, one per registered task."""
globals().update({f"{name}_cli": fn for name, fn in COMMANDS.items()})


@predict_app.command("merge")
@user_errors
def merge_cli(
    output: Annotated[Path, typer.Argument(help="The output the shards were run with (-o); its "
                                                "shards are OUTPUT.shard-I-of-N.")],
    keep_shards: Annotated[bool, typer.Option("--keep-shards", help="Keep the shard files "
                                              "and their state files.")] = False,
) -> None:
    """Join the shards of `predict <task> --shard I/N -o OUTPUT` runs into OUTPUT, in input order.

    Checks that all N shards are there, finished, and made from one input, one model and one
    chunk size; the result is the file one unsharded run writes.
    """
    from bertkit.predict.merge import merge_shards

    from bertkit.predict.state import output_lock

    with output_lock(output, create=False):  # not while a --jobs run or a merge writes it
        merged = merge_shards(output, keep=keep_shards)
    console = Console(stderr=True)
    _report_skipped(console, merged["skipped"], "the input")
    console.print(f"merged {merged['shards']} shards ({merged['chunks']} chunks) into {output}",
                  highlight=False)
