"""``bertkit finetune <task>`` for every registered task (:mod:`bertkit.tasks.registry`): the
options its settings dataclass declares (:mod:`bertkit.settings.options`, built by
:mod:`bertkit.cli._tasks`) plus the shared training options, over the task's ``finetune_<task>``,
which runs the shared driver (:mod:`bertkit.tasks.driver`)."""

from __future__ import annotations

from rich.console import Console

from bertkit.cli._app import finetune_app, make_console
from bertkit.cli._tasks import register_all, settings_command
from bertkit.workflows.command_settings import build_settings


def _run(config_cls, command: str, run, flags: dict, recipe):
    """Build the config (:func:`bertkit.workflows.command_settings.build_settings`: dataclass < the data
    set's dev-chosen settings for the packaged encoder < saved run with --resume < recipe <
    flags), print where the settings came from (the first line), run the task; results None on a
    non-main process of a multi-process run (it prints nothing)."""
    from bertkit.training.devices import is_main_process

    built = build_settings(config_cls, command, flags=flags, recipe=recipe)
    cfg, console = built.config, make_console()
    if is_main_process():
        console.print(built.line(), highlight=False, markup=False)
    results = run(cfg, console)
    done = "test" in results or "metrics" in results  # one run, or the summary of --seeds
    return cfg, console, (results if done else None)


def _finish(task_name: str, cfg, console: Console, results: dict | None) -> None:
    """Print a finished run: the task's test table (or the --seeds summary), the split rule if
    one was applied, and the run directory with the training throughput."""
    from bertkit.outputs.tables import seed_table
    from bertkit.tasks.registry import get_task

    if results is None:
        return
    task = get_task(task_name)
    if "metrics" in results:  # --seeds
        console.print(seed_table(results, f"{task_name}: {cfg.data}, seeds {results['seeds']}",
                                 tuple(m.key for m in task.headline)))
        console.print(f"summary: {cfg.output_dir}/summary.json; runs in "
                      f"{cfg.output_dir}/seed-N/", highlight=False)
        return
    console.print(task.report(results, f"test: {cfg.data}"))
    split = results.get("split_from_dev")
    if split:
        console.print(f"note: trained on {split['train']} examples of {split['source']}, "
                      f"{split['dev']} held out as dev (--split-from-dev {split['fraction']})",
                      highlight=False)
    rate = results.get(f"train_{task.unit}_per_second", 0.0)
    console.print(f"run directory: {cfg.output_dir} (best epoch {results['best_epoch']}; "
                  f"{rate:.1f} training {task.unit}/s)", highlight=False)


def _command(name: str, config_class: type):
    """``bertkit finetune <name>``: the options declared on the task's settings (its own, the
    shared fine-tuning ones, the loop's; :func:`bertkit.cli._tasks.settings_command`), --recipe."""
    from bertkit.tasks.registry import TASKS, load_attr

    def body(flags: dict, recipe) -> None:
        cfg, console, results = _run(config_class, f"finetune {name}",
                                     load_attr(TASKS[name].finetune), flags, recipe)
        _finish(name, cfg, console, results)

    return settings_command(config_class, body, config_class.commands.finetune, name)


COMMANDS = register_all(finetune_app, _command)
"""``{task: command function}``, one per registered task."""
globals().update({f"{name}_cli": fn for name, fn in COMMANDS.items()})
