"""``bertkit bench run|report|list``: thin wrappers over :mod:`bertkit.bench`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bertkit.bench.options import BenchRunSettings
from bertkit.cli._app import bench_app, make_console, user_errors
from bertkit.cli._tasks import declared_command
from bertkit.errors import BertkitError

ResultsFolder = Annotated[Path, typer.Argument(help="A bench run's results folder.")]


def _n(count: int, noun: str) -> str:
    """``1 task``, ``2 tasks``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _run(s: BenchRunSettings) -> None:
    from bertkit.bench.encoders import resolve_all
    from bertkit.bench.runner import LITE_NOTE, Runner
    from bertkit.bench.suite import load_suite
    from bertkit.jobs.executors import executor_settings, require

    require(s.executor)  # before anything is read or written
    loaded = load_suite(s.suite)
    part = None
    if s.tasks is not None:  # an empty --tasks (an unset $VAR) must not mean the whole suite
        names = [t.strip() for t in s.tasks.split(",") if t.strip()]
        if not names:
            raise BertkitError(f"--tasks {s.tasks!r} names no task", expected=(
                "comma-separated task names of suite " + loaded.name + ": " +
                ", ".join(t.name for t in loaded.tasks) + " (leave --tasks out for all)"))
        part = loaded.only(names).tasks
    encoders = resolve_all(list(s.encoder))
    console = make_console()
    runner = Runner(loaded, encoders, s.output_dir, s.budget, s.protocol,
                    list(range(1, s.seeds + 1)) if s.seeds else None, s.jobs, s.resume, console,
                    part, executor_settings(vars(s)))  # where the stages run
    where = f"{runner.jobs} job(s) of {runner.threads} thread(s)" if s.executor == "local" else \
        (f"executor {s.executor}, jobs of {runner.threads} core(s) (submitit's files: "
         f"{s.output_dir}/submitit)")
    console.print(f"bench {loaded.name} ({loaded.path}): {_n(len(runner.tasks), 'task')} x "
                  f"{_n(len(encoders), 'encoder')} x {_n(len(runner.seeds), 'seed')}, protocol "
                  f"{runner.protocol}, budget {s.budget}, {where}"
                  + (f"; {LITE_NOTE}" if s.budget == "lite" else ""), highlight=False)
    counts = runner.run()
    console.print(f"stages: {counts['finished']} run, {counts['kept']} kept; results in "
                  f"{s.output_dir}", highlight=False)
    if s.report:
        _report(s.output_dir, None, console)


run_cli = bench_app.command("run")(user_errors(declared_command(BenchRunSettings, _run, """
    Fine-tune every encoder on every task of a suite, seed by seed, each run a stage with its
    own result file, then write the report (bertkit bench report). A stopped run (Ctrl-C) keeps
    its finished stages: the same command with --resume continues.""")))
run_cli.__name__ = "run_cli"


def _report(out: Path, baseline: str | None, console) -> None:
    from bertkit.bench.report import write_report
    from bertkit.bench.stats import BOOTSTRAP_SAMPLES

    # the tests take a while on a large folder (the mini suite's: about two minutes): said first
    console.print(f"reporting {out}: each encoder against the baseline per task (almost "
                  f"stochastic order, {BOOTSTRAP_SAMPLES:,} bootstrap resamples of the test "
                  f"items) ...", highlight=False)
    r = write_report(out, baseline)
    for enc, tasks in r["comparisons"].items():
        for task, c in tasks.items():
            if c.get("bootstrap_note"):
                console.print(f"warning: {enc} against {r['baseline']} on {task}: no bootstrap "
                              f"({c['bootstrap_note']})", highlight=False, markup=False)
    for enc, e in r["encoders"].items():
        score = e["suite_score"]
        gaps = len(e.get("tasks_without_results", [])) + len(e.get("tasks_short_of_seeds", {}))
        mixed = [t for t, by in r.get("mixed_precision", {}).items() if enc in by]
        said = (f" (partial: {gaps} task{'s' if gaps > 1 else ''} without results or short of "
                f"seeds)" if gaps else "") + \
            (f"; precision mixed on {', '.join(mixed)}" if mixed else "")
        console.print(f"{enc}: suite score {score:.2f}{said}" if score is not None else
                      f"{enc}: -", highlight=False)
    console.print(f"report: {out}/report.md, report.json, report.png"
                  + (f" ({r['note']})" if r["note"] else ""), highlight=False)


@bench_app.command("report")
@user_errors
def report_cli(
    output_dir: ResultsFolder,
    baseline: Annotated[Optional[str], typer.Option("--baseline", "-b", help="The encoder the others are compared with. \\[default: the first]")] = None,
) -> None:
    """Fold a bench run's result files into report.md, report.json and report.png: per task
    mean ± sd over seeds, family means, the suite score as BLURB computes it, each encoder
    against the baseline (almost stochastic order, paired bootstrap), contamination, and the
    leaderboard with the published rows."""
    _report(output_dir, baseline, make_console())


@bench_app.command("status")
@user_errors
def status_cli(
    output_dir: ResultsFolder,
) -> None:
    """List a bench run's stages by state: done, running (its job id), failed (the tail of its
    log), pending. `bench run` into the folder again runs the pending and failed ones."""
    from rich.console import Console
    from rich.table import Table

    from bertkit.bench.status import STATES, stage_states

    rows = stage_states(output_dir)
    console = make_console()
    console.print(f"{output_dir}: " + ", ".join(
        f"{sum(r['state'] == s for r in rows)} {s}" for s in STATES), highlight=False)
    table = Table()
    for col in ("state", "stage", "detail"):
        table.add_column(col)
    for state in STATES:
        for r in rows:
            if r["state"] == state:
                table.add_row(state, r["stage"], r["detail"])
    (console if console.is_terminal else Console(width=200)).print(table)


def _settings_text(settings: dict) -> str:
    from bertkit.settings.layers import format_value

    return ", ".join(f"{k} {format_value(v)}" for k, v in settings.items()) or "-"


@bench_app.command("list")
@user_errors
def list_cli(
    suite: Annotated[Optional[str], typer.Argument(help="A suite: print its tasks instead of the list.")] = None,
) -> None:
    """List the shipped suites, or one suite's tasks (data set, metric, family, recipe, lite caps)
    and reference rows; what `bench run` would refuse (an unregistered data set, an unknown task
    kind or setting) is named, exit 1."""
    from rich.console import Console
    from rich.table import Table

    from bertkit.bench.declarations import declared_metrics
    from bertkit.bench.stage_settings import check_suite_settings
    from bertkit.bench.suite import check_suite, find_suite, parse_suite, suite_files

    console = make_console()
    if suite is None:
        table = Table(title="bertkit bench suites (bertkit bench list NAME)")
        for col in ("name", "tasks", "description"):
            table.add_column(col)
        for name, path in suite_files().items():
            s = parse_suite(path)
            problems = check_suite(s) + check_suite_settings(s)
            note = f" [{len(problems)} task(s) cannot run: bench list {name}]" if problems \
                else ""
            table.add_row(name, str(len(s.tasks)), s.description + note)
        console.print(table)
        return
    s = parse_suite(find_suite(suite))
    table = Table(title=f"{s.name}: {s.description} (protocol {s.protocol}, seeds {s.seeds})")
    for col in ("task", "kind", "data", "metric", "family", "recipe", "lite"):
        table.add_column(col)
    for t in s.tasks:
        table.add_row(t.name, t.task, t.data, t.metric, t.family,
                      _settings_text({**s.defaults, **t.recipe}), _settings_text(t.lite))
    # into a file or a pipe (80 columns) the recipe and lite columns were cut: lay it out wide
    (console if console.is_terminal else Console(width=200)).print(table)
    metrics = declared_metrics()
    for name in dict.fromkeys(t.metric for t in s.tasks):
        console.print(f"metric {name}: {metrics[name].description}", highlight=False)
    for ref in s.references:
        console.print(f"reference: {ref.model}, {ref.size} ({ref.source})", highlight=False)
    for m in s.missing:
        console.print(f"missing: {m['name']} ({m['family']}) {m.get('reason', '')}",
                      highlight=False)
    bad = check_suite(s) + check_suite_settings(s)  # what bench run would refuse
    for problem in bad:
        console.print(f"error: {problem}", highlight=False, markup=False)
    if bad:
        raise typer.Exit(1)
