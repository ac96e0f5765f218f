"""``bertkit bench run|report|list``: thin wrappers over :mod:`bertkit.bench`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Optional

import typer

from bertkit.cli._app import bench_app, make_console, user_errors


@bench_app.command("run")
@user_errors
def run_cli(
    suite: Annotated[str, typer.Argument(help="A shipped suite (bertkit bench list) or a suite YAML file.")],
    encoder: Annotated[list[str], typer.Option("--encoder", "-e", help="NAME=MODEL: an encoder to judge (a model directory, a cached hub id, or 'minilm' for the packaged MiniLM-L6-H384). Repeatable; names must differ.")],
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="Results folder. Rerun into it: finished stages are kept (refused if their settings or encoder differ).")],
    seeds: Annotated[Optional[int], typer.Option("--seeds", min=1, help="Run seeds 1..N per task. \\[default: the suite's seeds]")] = None,
    budget: Annotated[Literal["full", "lite"], typer.Option("--budget", help="full: the suite's recipes as the papers run them; lite: each task capped as the suite says (training examples, epochs), not comparable with the published numbers.")] = "full",
    protocol: Annotated[Optional[Literal["fixed", "dev-grid"]], typer.Option("--protocol", help="fixed: one recipe per task for every encoder; dev-grid: each encoder's learning rate chosen on dev from the suite's grid, then its seeds. \\[default: the suite's]")] = None,
    tasks: Annotated[Optional[str], typer.Option("--tasks", "-t", help="Comma-separated task names: run only these of the suite's tasks (a long suite a few tasks at a time into one results folder). \\[default: all]")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, help="Fine-tunes run side by side, each with cores/N threads (0: one per core, one thread each; cores: those this process may use, e.g. under taskset).")] = 0,
    resume: Annotated[bool, typer.Option("--resume", help="Continue stages that were stopped from their last checkpoint (without it they start again).")] = False,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Write the report when every stage has finished.")] = True,
) -> None:
    """Fine-tune every encoder on every task of a suite, seed by seed, each run a stage with its
    own result file, then write the report (bertkit bench report). A stopped run (Ctrl-C) keeps
    its finished stages: the same command with --resume continues."""
    from bertkit.bench.encoders import resolve_all
    from bertkit.bench.runner import LITE_NOTE, Runner
    from bertkit.bench.suite import PROTOCOLS, load_suite
    from bertkit.errors import BertkitError

    if budget not in ("full", "lite"):
        raise BertkitError(f"unknown budget {budget!r}", expected="full or lite")
    if protocol is not None and protocol not in PROTOCOLS:
        raise BertkitError(f"unknown protocol {protocol!r}", expected=" or ".join(PROTOCOLS))
    loaded = load_suite(suite)
    part = loaded.only([t.strip() for t in tasks.split(",") if t.strip()]).tasks if tasks else None
    encoders = resolve_all(list(encoder))
    console = make_console()
    runner = Runner(loaded, encoders, output_dir, budget, protocol,
                    list(range(1, seeds + 1)) if seeds else None, jobs, resume, console, part)
    console.print(f"bench {loaded.name} ({loaded.path}): {len(runner.tasks)} tasks x "
                  f"{len(encoders)} encoders x {len(runner.seeds)} seeds, protocol "
                  f"{runner.protocol}, budget {budget}, {runner.jobs} job(s) of {runner.threads} "
                  f"thread(s)" + (f"; {LITE_NOTE}" if budget == "lite" else ""), highlight=False)
    counts = runner.run()
    console.print(f"stages: {counts['finished']} run, {counts['kept']} kept; results in "
                  f"{output_dir}", highlight=False)
    if report:
        _report(output_dir, None, console)


def _report(out: Path, baseline: str | None, console) -> None:
    from bertkit.bench.report import write_report

    r = write_report(out, baseline)
    for enc, e in r["encoders"].items():
        score = e["suite_score"]
        console.print(f"{enc}: suite score {score:.2f}" if score is not None else f"{enc}: -",
                      highlight=False)
    console.print(f"report: {out}/report.md, report.json, report.png"
                  + (f" ({r['note']})" if r["note"] else ""), highlight=False)


@bench_app.command("report")
@user_errors
def report_cli(
    output_dir: Annotated[Path, typer.Argument(help="A bench run's results folder.")],
    baseline: Annotated[Optional[str], typer.Option("--baseline", "-b", help="The encoder the others are compared with. \\[default: the first]")] = None,
) -> None:
    """Fold a bench run's result files into report.md, report.json and report.png: per task
    mean ± sd over seeds, family means, the suite score as BLURB computes it, each encoder
    against the baseline (almost stochastic order, paired bootstrap), contamination, and the
    leaderboard with the published rows."""
    _report(output_dir, baseline, make_console())


def _settings_text(settings: dict) -> str:
    from bertkit.config import format_value

    return ", ".join(f"{k} {format_value(v)}" for k, v in settings.items()) or "-"


@bench_app.command("list")
@user_errors
def list_cli(
    suite: Annotated[Optional[str], typer.Argument(help="A suite: print its tasks instead of the list.")] = None,
) -> None:
    """List the shipped suites, or one suite's tasks (data set, metric, family, recipe, lite caps)
    and reference rows; a task that cannot run yet (unregistered data set) is named."""
    from rich.table import Table

    from bertkit.bench.metrics import METRICS
    from bertkit.bench.suite import check_suite, find_suite, parse_suite, suite_files

    console = make_console()
    if suite is None:
        table = Table(title="bertkit bench suites (bertkit bench list NAME)")
        for col in ("name", "tasks", "description"):
            table.add_column(col)
        for name, path in suite_files().items():
            s = parse_suite(path)
            problems = check_suite(s)
            note = f" [{len(problems)} task(s) not runnable yet]" if problems else ""
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
    console.print(table)
    for name in dict.fromkeys(t.metric for t in s.tasks):
        console.print(f"metric {name}: {METRICS[name].description}", highlight=False)
    for ref in s.references:
        console.print(f"reference: {ref.model}, {ref.size} ({ref.source})", highlight=False)
    for m in s.missing:
        console.print(f"missing: {m['name']} ({m['family']}) {m.get('reason', '')}",
                      highlight=False)
    for problem in check_suite(s):
        console.print(f"not runnable yet: {problem}", highlight=False, markup=False)
