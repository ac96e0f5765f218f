"""Fine-tuning tasks by name: the one task table. The CLI (every task's ``finetune``,
``evaluate`` and ``predict``), ``bertkit run`` recipes, model cards, ``bertkit adapt`` and TAPT
text all read it.

Each entry names a :class:`~bertkit.tasks.base.Task` object (``module:attribute``, imported on
first use, so listing tasks loads no model code), the task's settings dataclass and its
``finetune_<name>(cfg, console)`` function (both as ``module:attribute`` for recipes'
command table, :data:`bertkit.workflows.recipes.COMMANDS`). Adding a task is one package under
``bertkit/tasks/`` (its settings declare its command-line options, :mod:`bertkit.settings.options`), its
metrics module, its data-set lines in :mod:`bertkit.data.sets` and one line here.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

from bertkit.errors import BertkitError


class TaskEntry(NamedTuple):
    """Where a registered task lives: its Task object, config class and finetune function."""

    task: str
    config: str
    finetune: str


TASKS: dict[str, TaskEntry] = {
    "ner": TaskEntry("bertkit.tasks.ner.task:TASK", "bertkit.tasks.ner:NERConfig",
                     "bertkit.tasks.ner:finetune_ner"),
    "re": TaskEntry("bertkit.tasks.re.task:TASK", "bertkit.tasks.re:REConfig",
                    "bertkit.tasks.re:finetune_re"),
    "dep": TaskEntry("bertkit.tasks.dep.task:TASK", "bertkit.tasks.dep:DepConfig",
                     "bertkit.tasks.dep:finetune_dep"),
    "cls": TaskEntry("bertkit.tasks.cls.task:TASK", "bertkit.tasks.cls:CLSConfig",
                     "bertkit.tasks.cls:finetune_cls"),
    "qa": TaskEntry("bertkit.tasks.qa.task:TASK", "bertkit.tasks.qa:QAConfig",
                    "bertkit.tasks.qa:finetune_qa"),
    "sim": TaskEntry("bertkit.tasks.sim.task:TASK", "bertkit.tasks.sim:SimConfig",
                     "bertkit.tasks.sim:finetune_sim"),
    "coref": TaskEntry("bertkit.tasks.coref.task:TASK", "bertkit.tasks.coref:CorefConfig",
                       "bertkit.tasks.coref:finetune_coref"),
}


def load_attr(spec: str):
    """The object named by ``"package.module:attribute"``."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def task_names() -> list[str]:
    """The registered task names, in registration order."""
    return list(TASKS)


def get_task(name: str):
    """The :class:`~bertkit.tasks.base.Task` registered as ``name``.

    Raises:
        BertkitError: an unknown name (the message lists the registered ones).
    """
    if name not in TASKS:
        raise BertkitError(f"unknown task {name!r}", expected="one of " + ", ".join(TASKS))
    return load_attr(TASKS[name].task)


def finetune_commands() -> dict[str, tuple[str, str]]:
    """``{"finetune <name>": (config spec, finetune function spec)}`` for recipes."""
    return {f"finetune {name}": (e.config, e.finetune) for name, e in TASKS.items()}
