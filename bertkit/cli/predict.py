"""``bertkit predict <task>``: one command per registered task (:mod:`bertkit.tasks.registry`),
with the options the task declares (:class:`bertkit.options.Commands`, built by
:mod:`bertkit.cli._tasks`), running the one shared body, :func:`predict_saved`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from bertkit.cli._app import predict_app
from bertkit.cli._tasks import inference_command, register_all


def predict_saved(task_name: str, model: str, input: Path, output: Path | None = None,
                  **kwargs: Any) -> str:
    """Run the ``predict`` function of task ``task_name`` (:mod:`bertkit.tasks.registry`) on
    ``input`` with the saved model ``model``; notes go to standard error, the predictions to
    ``output`` (written atomically by the task) or, without one, to standard output.

    Args:
        kwargs: the task's ``predict`` options (input_format, device, batch_size, ...).

    Returns:
        the predictions' text.

    Raises:
        BertkitError: from the task's ``predict`` (unknown format, bad input, no saved model).
    """
    from bertkit.errors import BertkitError
    from bertkit.tasks.registry import get_task

    if str(input) != "-" and not Path(input).is_file():  # before the model is loaded (seconds)
        raise BertkitError(f"{input}: file not found" if not Path(input).exists()
                           else f"{input}: not a file (expected the input file to predict on)")
    text = get_task(task_name).predict(model, str(input), str(output) if output else None,
                                       console=Console(stderr=True), **kwargs)
    if output is None:
        typer.echo(text, nl=False)
    return text


COMMANDS = register_all(predict_app, inference_command(predict_saved, "predict"))
"""``{task: command function}``, one per registered task."""
globals().update({f"{name}_cli": fn for name, fn in COMMANDS.items()})
