"""``bertkit predict <task>``: one command per registered task (:mod:`bertkit.tasks.registry`),
with the options the task declares (:class:`bertkit.settings.options.Commands`, built by
:mod:`bertkit.cli._tasks`), running the one shared body, :func:`predict_saved`; and
``bertkit predict merge``, which joins the shards of ``--shard I/N`` runs."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from bertkit.cli._app import predict_app, user_errors
from bertkit.cli._tasks import inference_command, register_all


def predict_saved(task_name: str, model: str, input: Path, output: Path | None = None,
                  **kwargs: Any) -> str:
    """Run task ``task_name``'s ``predict`` (:mod:`bertkit.tasks.registry`) on ``input`` with the
    saved model ``model``; notes go to standard error, the predictions to ``output`` or, without
    one, to standard output. An input the task's ``stream`` predictor reads runs through
    :func:`bertkit.predict.shards.run` (chunks, ``--resume``, ``--shard``, ``--jobs``,
    ``--executor``, ``--skip-bad-lines``); one it cannot stream (CSV/TSV, SQuAD JSON) is read,
    predicted and written whole by the task's ``predict``.

    Args:
        kwargs: the task's ``predict`` options (input_format, device, batch_size, ...) and the
            streaming options (:data:`bertkit.predict.shards.STREAM_DEFAULTS`). A task's
            ``stream`` that takes ``output`` is given the output's name (``auto`` formats).

    Returns:
        the predictions' text (empty for a streamed input: it was written as it went).

    Raises:
        BertkitError: from the task's ``predict`` (unknown format, bad input, no saved model),
            or bad streaming options (``--shard`` not I/N, ``--jobs``/``--shard`` without
            ``--output``, both at once).
    """
    from bertkit.errors import BertkitError
    from bertkit.predict.shards import STREAM_DEFAULTS, check_options, run
    from bertkit.tasks.registry import get_task

    if str(input) != "-" and not Path(input).is_file():  # before the model is loaded (seconds)
        raise BertkitError(f"{input}: file not found" if not Path(input).exists()
                           else f"{input}: not a file (expected the input file to predict on)")
    task = get_task(task_name)
    console = Console(stderr=True)
    stream = {k: kwargs.pop(k, v) for k, v in STREAM_DEFAULTS.items()}
    check_options(stream, output)  # before the model is loaded
    task_kwargs = {k: v for k, v in kwargs.items() if k != "skip_bad_lines"}
    if hasattr(task, "stream") and "output" in inspect.signature(task.stream).parameters:  # its format may follow it
        task_kwargs["output"] = str(output) if output is not None else None
    load = functools.partial(_load_predictor, task_name, model, str(input), task_kwargs)
    predictor = load(console)
    if predictor is not None:
        run(predictor, load, input, output,
            {**stream, "skip_bad_lines": kwargs.get("skip_bad_lines", False)}, console)
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


def _load_predictor(task_name: str, model: str, input: str, kwargs: dict,
                    console: Console | None) -> Any:
    """Task ``task_name``'s streaming predictor of ``input`` (None: read whole). Module-level,
    so that a ``--jobs`` worker can unpickle it and load its own model."""
    from bertkit.tasks.registry import get_task

    task = get_task(task_name)
    return task.stream(model, input, console=console, **kwargs) if hasattr(task, "stream") \
        else None


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
    from bertkit.predict.shards import report_skipped
    from bertkit.predict.merge import merge_shards
    from bertkit.predict.state import output_lock

    with output_lock(output, create=False):  # not while a --jobs run or a merge writes it
        merged = merge_shards(output, keep=keep_shards)
    console = Console(stderr=True)
    report_skipped(console, merged["skipped"], "the input")
    console.print(f"merged {merged['shards']} shards ({merged['chunks']} chunks) into {output}",
                  highlight=False)
