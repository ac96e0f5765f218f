"""``bertkit run RECIPE``, ``bertkit recipes`` and ``bertkit plot RUN_DIR``: thin wrappers over
:mod:`bertkit.workflows.recipes` and :mod:`bertkit.outputs.plots`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from bertkit.cli._app import app, make_console, user_errors
from bertkit.cli._tasks import declared_command
from bertkit.settings.recipe_files import RunSettings


def _run(s: RunSettings) -> None:
    from bertkit.workflows.recipes import apply_overrides, load, run_recipe
    from bertkit.training.rundir import RunStopped

    rec = apply_overrides(load(s.recipe), list(s.set_ or []))
    root = s.output_dir or Path("runs") / f"{rec.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    console = make_console()
    console.print(f"recipe {rec.name} ({rec.path}): {rec.description}", highlight=False)
    try:
        results = run_recipe(rec, root, console)
    except RunStopped as stop:  # the same command continues: see bertkit.workflows.recipe_stages
        raise stop.continue_with(
            f"the same bertkit run command again with --output-dir {root}: finished stages are "
            f"kept and this one continues from step {stop.step}") from None
    console.print(f"done: {len(results)} stage(s) under {root}", highlight=False)


run_cli = app.command("run")(user_errors(declared_command(RunSettings, _run, """
    Run a recipe: one command, or several stages in order (vocab build, pretraining phases,
    fine-tuning), each with the settings the recipe gives and your --set overrides.
    `bertkit recipes NAME` prints a recipe's settings.""")))
run_cli.__name__ = "run_cli"


@app.command("recipes")
@user_errors
def recipes_cli(
    name: Annotated[Optional[str], typer.Argument(help="A recipe (name or file): print its stages and settings instead of the list.")] = None,
) -> None:
    """List the named recipes with one line each, or print one recipe's stages and settings
    (bertkit recipes bc5cdr-ner-minilm)."""
    from bertkit.workflows.recipes import list_recipes

    if name:
        _show_recipe(name)
        return

    table = Table(title="bertkit recipes (bertkit run NAME)")
    # name and commands never wrap (one stage a line): the description takes the rest of the width
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("command(s)", no_wrap=True)
    table.add_column("description", ratio=1)
    for rec in list_recipes():
        table.add_row(rec.name, "\n".join(s.command for s in rec.stages), rec.description)
    Console().print(table)


def _show_recipe(name: str) -> None:
    """Print a recipe's description, file, and each stage's command and settings."""
    from bertkit.settings.layers import format_value
    from bertkit.workflows.recipes import load

    rec = load(name)
    console = make_console()
    say = lambda text: console.print(text, highlight=False, markup=False)  # noqa: E731
    say(f"{rec.name}: {rec.description}")
    say(f"file: {rec.path}")
    for stage in rec.stages:
        say(f"bertkit {stage.command}" if len(rec.stages) == 1
            else f"stage {stage.name}: bertkit {stage.command}")
        for key, value in stage.settings.items():
            say(f"  {key}: {format_value(value)}")
    say(f"run it: bertkit run {rec.name} (--set key=value changes a setting)")


@app.command("plot")
@user_errors
def plot_cli(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (with metrics.jsonl).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="PNG file. \\[default: RUN_DIR/curves.png]")] = None,
) -> None:
    """Draw a run's training-loss and evaluation curves (from metrics.jsonl) as a PNG."""
    from bertkit.outputs.plots import plot_run

    Console().print(f"wrote {plot_run(run_dir, out)}", highlight=False)
