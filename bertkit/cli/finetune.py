"""``bertkit finetune <task>`` for every registered task (:mod:`bertkit.tasks.registry`): the
options its settings dataclass declares (:mod:`bertkit.options`, built by
:mod:`bertkit.cli._tasks`) plus the shared training options, over the task's ``finetune_<task>``,
which runs the shared driver (:mod:`bertkit.tasks.driver`)."""

from __future__ import annotations

import dataclasses
import inspect

from rich.console import Console

from bertkit.cli import _options as opt
from bertkit.cli._app import finetune_app, make_console
from bertkit.cli._tasks import command, finetune_parameters, register_all
from bertkit.settings import build_settings


def _run(config_cls, command: str, run, flags: dict, recipe):
    """Build the config (:func:`bertkit.settings.build_settings`: dataclass < the data
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
    from bertkit.reports import seed_table
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
    """``bertkit finetune <name>``: the settings fields' options, the training options, --recipe."""
    from bertkit.tasks.registry import TASKS, load_attr

    def body(train_flags: dict | None = None, recipe=None, **values) -> None:
        flags = opt.train_options(train_flags, **values)
        cfg, console, results = _run(config_class, f"finetune {name}",
                                     load_attr(TASKS[name].finetune), flags, recipe)
        _finish(name, cfg, console, results)

    params = finetune_parameters(config_class, name) + [inspect.Parameter(
        "recipe", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=opt.Recipe)]
    own_defaults = {f.name: f.default for f in dataclasses.fields(config_class)
                    if f.name in opt.LOOP_OPTIONS and f.default is not dataclasses.MISSING}
    return opt.training_options(**own_defaults)(
        command(body, params, config_class.commands.finetune))


COMMANDS = register_all(finetune_app, _command)
"""``{task: command function}``, one per registered task."""
globals().update({f"{name}_cli": fn for name, fn in COMMANDS.items()})
