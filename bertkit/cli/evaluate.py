"""``bertkit evaluate <task>``: one command per registered task (:mod:`bertkit.tasks.registry`),
with the options the task declares (:class:`bertkit.settings.options.Commands`, built by
:mod:`bertkit.cli._tasks`), running the one shared body, :func:`evaluate_saved`: the task's
``evaluate`` (an :class:`~bertkit.tasks.base.Evaluation`), its ``report`` table, and the
metrics/predictions/confusion files asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from bertkit.cli._app import evaluate_app, make_console
from bertkit.cli._tasks import inference_command, register_all


def evaluate_saved(task_name: str, model: str, data: str, split: str = "test",
                   output: Path | None = None, predictions: Path | None = None,
                   confusion: Path | None = None, **kwargs: Any) -> dict:
    """Score the saved model ``model`` of task ``task_name`` on ``split`` of ``data`` and print
    the task's table; write the metrics (JSON) to ``output``, the predictions to
    ``predictions`` and the confusion matrix to ``confusion``.csv/.png, each when given.

    Args:
        kwargs: the task's ``evaluate`` options (device, precision, batch_size, ...).

    Returns:
        the metrics.

    Raises:
        BertkitError: from the task's ``evaluate`` (no saved model, bad data, unknown split).
    """
    from bertkit.io import write_json
    from bertkit.tasks.common import parse_split, write_label_outputs
    from bertkit.tasks.registry import get_task

    task = get_task(task_name)
    console = make_console()
    result = task.evaluate(model, data, split, console=console, **kwargs)
    held_out_note(task_name, model, parse_split(split), console, data)
    title = f"{split}: {data}"
    console.print(task.report(result.metrics, title))
    if output:
        write_json(output, result.metrics)
    write_label_outputs(confusion, predictions, result.predictions_text() if predictions else "",
                        result.metrics, title)
    return result.metrics


def held_out_note(task_name: str, model: str, split: str, console: Console | None,
                  data: str | None = None) -> str | None:
    """A warning when ``split`` is ``dev`` and the saved run was trained on its dev file less a
    held-out part (``split_from_dev`` in the run's ``results.json``): ``evaluate`` reads the
    whole dev file, so part of what it scores was trained on. The held-out part's scores are
    ``results.json``'s ``dev``. A task that splits a set without a train file itself (its
    ``default_split_from_dev``: the dependency parser on GENIA; the run says ``automatic``, or
    ``data`` has no train file) is the exception: ``evaluate dep`` scores every 10th dev sentence
    itself (and says so), the held-out part of a run with fraction 0.1; another fraction is
    warned about.

    Returns:
        the warning printed on ``console`` (None: nothing to warn about).
    """
    import json

    from rich.markup import escape

    if split != "dev":
        return None
    root = Path(model)
    found = [p for p in (root / "results.json", root.parent / "results.json") if p.is_file()]
    try:
        held = json.loads(found[0].read_text(encoding="utf-8")).get("split_from_dev") \
            if found else None
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(held, dict):
        return None
    trained = held.get("split_train", held.get("train"))  # the split's own sizes
    kept = held.get("split_dev", held.get("dev"))
    from bertkit.tasks.registry import get_task

    task = get_task(task_name)
    own = getattr(task, "default_split_from_dev", None)
    if own and (held.get("automatic") or not _has_train_file(task, data)):
        if held.get("fraction") == own:
            return None  # evaluate scores the same held-out part
        warning = (f"evaluate {task_name} scores every {round(1 / own)}th "
                   f"{task.unit.removesuffix('s')} of {held.get('source')} (a set "
                   f"without a train file), but this model held out a fraction "
                   f"{held.get('fraction')} ({trained} trained on, {kept} held out): some of the "
                   f"sentences scored here were trained on. The held-out part's scores are "
                   f"\"dev\" in {found[0]}")
    else:
        warning = (f"this model was trained on {held.get('source')} less every example held out "
                   f"as dev (fraction {held.get('fraction')}: {trained} trained on, {kept} held "
                   f"out); the dev split scored here is the whole file, trained-on examples "
                   f"included. The held-out part's scores are \"dev\" in {found[0]}")
    if console is not None:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    return warning


def _has_train_file(task, data: str | None) -> bool:
    """Whether ``data`` of ``task`` has a train file (True when unknown)."""
    if data is None:
        return True
    from bertkit.data.sets import resolve_local
    from bertkit.errors import BertkitError

    try:
        return bool(resolve_local(data, task.data_kind, task.extensions, ("train",)))
    except BertkitError:
        return False


COMMANDS = register_all(evaluate_app, inference_command(evaluate_saved, "evaluate"))
"""``{task: command function}``, one per registered task."""
globals().update({f"{name}_cli": fn for name, fn in COMMANDS.items()})
