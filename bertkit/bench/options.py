"""The settings of ``bertkit bench run``, declared once (:mod:`bertkit.settings.options`); the command is
generated from them (:func:`bertkit.cli._tasks.declared_command`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.bench.suite import PROTOCOLS
from bertkit.jobs.executors import ExecutorSettings
from bertkit.settings.options import option

BUDGETS = ("full", "lite")


@dataclass(kw_only=True)
class BenchRunSettings(ExecutorSettings):
    """``bertkit bench run``: the suite, the encoders and how :class:`bertkit.bench.runner.Runner`
    runs them (where: the executor's settings, each stage one job)."""

    suite: str = option(help="A shipped suite (bertkit bench list) or a suite YAML file.",
                        positional=True)
    encoder: list[str] = option(
        help="NAME=MODEL: an encoder to judge (a model directory, a cached hub id, or 'minilm' "
             "for the packaged MiniLM-L6-H384). Repeatable; names must differ.",
        flags=("--encoder", "-e"), repeat=True, type=str)
    output_dir: Path = option(
        help="Results folder. Rerun into it: finished stages are kept (refused if their settings "
             "or encoder differ).", flags=("--output-dir", "-o"))
    seeds: int | None = option(None, help="Run seeds 1..N per task (a count N, e.g. 3; "
                               "not a list as finetune's --seeds 1,2,3).", min=1,
                               shown="the suite's seeds")
    budget: str = option("full", help="full: the suite's recipes as the papers run them; lite: "
                         "each task capped as the suite says (training examples, epochs), not "
                         "comparable with the published numbers.", choices=BUDGETS)
    protocol: str | None = option(
        None, help="fixed: one recipe per task for every encoder; dev-grid: each encoder's "
                   "learning rate chosen on dev from the suite's grid, then its seeds.",
        choices=PROTOCOLS, shown="the suite's")
    tasks: str | None = option(
        None, help="Comma-separated task names: run only these of the suite's tasks (a long "
                   "suite a few tasks at a time into one results folder).",
        flags=("--tasks", "-t"), shown="all")
    jobs: int = option(0, help="Fine-tunes run side by side, each with cores/N threads, or "
                       "OMP_NUM_THREADS where set (0: cores/OMP_NUM_THREADS jobs, else one per "
                       "core, one thread each; cores: those this process may use, e.g. under "
                       "taskset). --executor local only.", flags=("--jobs", "-j"), min=0)
    resume: bool = option(False, help="Continue stages that were stopped from their last "
                          "checkpoint (without it they start again).", flags=("--resume",))
    report: bool = option(True, help="Write the report when every stage has finished.",
                          flags=("--report/--no-report",))
