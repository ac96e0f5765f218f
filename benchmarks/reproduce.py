"""Domain adaptation in miniature, through recipes and ``bertkit bench`` (issue 43): a thin plan.

Each encoder is one recipe (``recipes/pretrain/mini/*.yaml``, S is ``mini-scibert``), run by
``bertkit run RECIPE -o WORK/ENC`` (a rerun continues a stopped run); it is then exported as a
small release (``benchmarks/encoders/ENC``: fp16 safetensors loaded as fp32, vocabulary,
provenance, model card; :mod:`bertkit.bench.release`) and judged by the shipped ``mini`` suite,
``bertkit bench run mini --encoder ENC=benchmarks/encoders/ENC -o BENCH`` (every encoder into one
results folder; a rerun keeps finished stages; bench's default ``--jobs``: one fine-tune per
core, one thread each, so a stage's wall time is about its thread-hours / cores). ``merge``
derives the table and the issue's verdicts from that bench folder alone
(``bertkit.bench.report``). The previous stage-by-stage
script is ``reproduce_v1.py``, the record of ``results/reproduce/``.

    python benchmarks/reproduce.py plan                     # stages, commands, thread-hours
    python benchmarks/reproduce.py run pretrain-G --max-minutes 100   # rerun to continue
    python benchmarks/reproduce.py run export-G bench-G
    python benchmarks/reproduce.py merge                    # BENCH/reproduce.md

Encoders: R (the random floor), G (general vocabulary and corpus), S (SciBERT's route), GvS (G's
vocabulary on the scientific corpus), S-span (SpanBERT), G+D / G+G (DAPT and its control:
G continued for a third of its budget); issue 43's question 2 (Gu et al., 2021, Table 9):
G+D37 (G continued on the scientific corpus for S's whole 37 M tokens, G's vocabulary),
G+D37sv (the same from G extended with S's pieces, initialised as ``bertkit vocab extend``
does) and S-half (S at half its budget); G+D37 and G+D37sv continue the released G
(``benchmarks/encoders/G``), so they run without rebuilding G. G+T (TAPT) is per task, not one encoder: it stays in
``reproduce_v1.py`` (``bertkit adapt``). Question 3 (does S still lose ChemProt to G under
``dev-grid``?) is the stage ``bench-devgrid``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
V1 = HERE / "results" / "reproduce"  # reproduce_v1.py's stage JSONs: the timings we plan with
ENCODERS_DIR = HERE / "encoders"
TOKENS = 37_000_000
# encoder -> recipe, --set overrides, encoders it needs, commands before the recipe, product
# (the model folder under WORK/ENC), its pretraining tokens by phase (seq64, seq128) for the
# estimate, and the issue's question it serves
FULL = (26_624_000, 10_376_000)  # phase A at 64 positions, phase B at 128: 37 M in all
ENCODERS = {
    "R": {"recipe": "mini-R", "product": "init/model", "tokens": (0, 0)},
    "G": {"recipe": "mini-G", "product": "seq128/model", "tokens": FULL},
    "S": {"recipe": "mini-scibert", "product": "seq128/model", "tokens": FULL},
    "GvS": {"recipe": "mini-GvS", "product": "seq128/model", "tokens": FULL},
    "S-span": {"recipe": "mini-S-span", "product": "seq128/model", "tokens": FULL, "span": True},
    "G+D": {"recipe": "mini-G-plus-D", "needs": ["G"], "product": "model",
            "tokens": (0, 12_333_333)},
    "G+G": {"recipe": "mini-G-plus-G", "needs": ["G"], "product": "model",
            "tokens": (0, 12_333_333)},
    # question 2 continues the released G (its fp16 weights: a rounding of at most 5e-4 relative
    # against the fp32 G that G+D and G+G continued) and takes S's pieces from the released S,
    # so that it runs without rebuilding G and S (3.7 thread-hours)
    "G+D37": {"recipe": "mini-G-plus-D", "product": "model",
              "tokens": (0, TOKENS), "question": 2,
              "sets": [f"max_tokens={TOKENS}", f"model={ENCODERS_DIR / 'G'}"]},
    "G+D37sv": {"recipe": "mini-G-plus-D", "product": "model",
                "tokens": (0, TOKENS), "question": 2,
                "sets": [f"max_tokens={TOKENS}", "model={work}/G-ext"],
                "pre": [["{python}", "-m", "bertkit", "vocab", "extend", "--model",
                         str(ENCODERS_DIR / "G"), "--vocab", str(ENCODERS_DIR / "S"),
                         "--add", "8000", "--out", "{work}/G-ext", "--overwrite"]]},
    # issue 64: S's recipe with ModernBERT's architecture (recipes/pretrain/mini/mini-M.yaml)
    "M": {"recipe": "mini-M", "product": "seq128/model", "tokens": FULL, "question": 64},
    "S-half": {"recipe": "mini-scibert", "product": "seq128/model", "question": 2,
               "tokens": (13_312_000, 5_188_000),
               "sets": ["seq64.max_tokens=13312000", "seq128.max_tokens=5188000"]},
}
# the mini suite's tasks: training examples (../shared/data/README.md) and the v1 task whose
# measured minutes per seed they scale from (a guess for the new sets: same kind, scaled by
# training size; HoC's abstracts fill the 128-token windows SciCite's sentences do not: x2.5)
SUITE_TASKS = {"bc5cdr": (4560, "ner", 1.0), "bc5-chem": (4560, "ner", 1.0),
               "bc5-disease": (4560, "ner", 1.0), "jnlpba": (16817, "ner", 1.0),
               "bc2gm": (12574, "ner", 1.0), "chemprot": (4169, "re", 1.0),
               "ddi": (25454, "re", 1.0), "scicite": (7320, "cls", 1.0), "hoc": (1297, "cls", 2.5)}
V1_TRAIN = {"ner": 4560, "re": 4169, "cls": 7320}  # bc5cdr, chemprot, scicite
SEEDS, GRID = 3, 4  # the mini suite's seeds and learning-rate grid


class Stage:
    """A stage: its command lines (``{python}``, ``{work}`` filled in at run time), the stages it
    needs, its estimated thread-hours and how to tell that it is done."""

    def __init__(self, name: str, commands: list[list[str]], deps: list[str], hours: float,
                 done: Path, env: dict | None = None):
        self.name, self.commands, self.deps, self.hours = name, commands, deps, hours
        self.done, self.env = done, env or {}


def rates(results: Path = V1) -> dict:
    """Measured costs from ``reproduce_v1.py``'s logs: pretraining tokens per second by phase
    (median over encoders: the last curve point's tokens / seconds) and fine-tuning minutes
    per seed by task kind (median over encoders of the 3-seed stage's wall minutes / 3). The
    logs were taken on the shared 2-core machine (load 1-4), one thread per run."""
    def load(name):
        p = results / f"{name}.json"
        return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}
    phase = {"seq64": [], "seq128": []}
    for enc in ("G", "S", "S-span", "G+D", "G+G"):
        for name, key in ((f"pretrain-{enc}-seq64", "seq64"), (f"pretrain-{enc}", "seq128")):
            pts = load(name).get("points") or []
            if pts and pts[-1].get("seconds"):
                phase[key].append(pts[-1]["tokens"] / pts[-1]["seconds"])
    tune = {}
    for kind in V1_TRAIN:
        walls = [load(f"finetune-{e}-{kind}").get("wall_minutes") for e in
                 ("R", "G", "S", "G+D", "G+G", "S-span")]
        walls = [w / SEEDS for w in walls if w]
        tune[kind] = statistics.median(walls) if walls else 2.0
    return {"tokens_per_s": {k: statistics.median(v) if v else 6000.0 for k, v in phase.items()},
            "minutes_per_seed": tune}


def suite_minutes(r: dict, runs_per_task: int = SEEDS) -> float:
    """Estimated one-thread minutes of the mini suite for one encoder."""
    return sum(runs_per_task * r["minutes_per_seed"][kind] * n / V1_TRAIN[kind] * factor
               for n, kind, factor in SUITE_TASKS.values())


def build_plan(work: Path, bench: Path, devgrid: Path, r: dict | None = None) -> dict[str, Stage]:
    """Every stage in running order: ``pretrain-ENC``, ``export-ENC``, ``bench-ENC`` per encoder,
    then ``bench-devgrid`` (G and S under the dev-grid protocol, question 3)."""
    r = r or rates()
    tps = r["tokens_per_s"]
    stages: dict[str, Stage] = {}
    py = ["{python}", "-m", "bertkit"]
    for enc, how in ENCODERS.items():
        sets = [a for s in how.get("sets", []) for a in ("--set", s)]
        run = [*py, "run", how["recipe"], "-o", f"{{work}}/{enc}", *sets]
        a, b = how["tokens"]
        hours = (a / tps["seq64"] + b / tps["seq128"]) / 3600 * (1.1 if how.get("span") else 1)
        product = work / enc / how["product"]
        stages[f"pretrain-{enc}"] = Stage(
            f"pretrain-{enc}", [*how.get("pre", []), run],
            [f"pretrain-{n}" for n in how.get("needs", [])], round(hours + 0.02, 2),
            product / "config.json", {"BERTKIT_MINI_WORK": "{work}"})
        release = ENCODERS_DIR / enc
        stages[f"export-{enc}"] = Stage(
            f"export-{enc}", [["{python}", str(HERE / "reproduce.py"), "export", enc,
                               "--work", "{work}"]], [f"pretrain-{enc}"], 0.01,
            release / "provenance.json")
        stages[f"bench-{enc}"] = Stage(
            f"bench-{enc}", [[*py, "bench", "run", "mini", "--encoder", f"{enc}={release}",
                              "-o", str(bench)]], [f"export-{enc}"],
            round(suite_minutes(r) / 60, 2), bench / "stages" / enc)
    stages["bench-devgrid"] = Stage(
        "bench-devgrid", [[*py, "bench", "run", "mini", "--protocol", "dev-grid", "--encoder",
                           f"G={ENCODERS_DIR / 'G'}", "--encoder", f"S={ENCODERS_DIR / 'S'}",
                           "-o", str(devgrid)]], ["export-G", "export-S"],
        round(2 * suite_minutes(r, SEEDS + GRID) / 60, 2), devgrid / "stages" / "S")
    return stages


def finished(stage: Stage) -> bool:
    """Done: a pretraining's model, an export's provenance, or a bench stage's every seed."""
    if stage.name.startswith("bench-"):
        return stage.done.is_dir() and len(list(stage.done.glob("*/seed-*.json"))) >= \
            SEEDS * len(SUITE_TASKS)
    return stage.done.is_file()


def render(cmd: list[str], work: Path) -> str:
    """A command line as a shell takes it (``{python}`` as ``python``, ``{work}`` filled)."""
    return shlex.join(["python" if a == "{python}" else a.replace("{work}", str(work))
                       for a in cmd])


def print_plan(stages: dict[str, Stage], work: Path) -> float:
    """Print each stage (done or not), its dependencies, thread-hours and command lines;
    returns the thread-hours left."""
    left = total = 0.0
    for s in stages.values():
        done = finished(s)
        total += s.hours
        left += 0.0 if done else s.hours
        env = " ".join(f"{k}={v.replace('{work}', str(work))}" for k, v in s.env.items())
        print(f"## {s.name}{' (done)' if done else ''}  ~{s.hours:.2f} thread-h  "
              f"needs: {', '.join(s.deps) or '-'}")
        for cmd in s.commands:
            print("   " + (env + " " if env else "") + render(cmd, work))
    print(f"# left ~{left:.1f} of ~{total:.1f} thread-hours (one thread per run; timings from "
          f"{V1.relative_to(ROOT)} on the shared 2-core machine, new tasks scaled by size)")
    return left


def run_stage(stage: Stage, stages: dict[str, Stage], work: Path, max_minutes: float | None,
              log_dir: Path) -> bool:
    """Run a stage after its unfinished dependencies; SIGTERM at ``max_minutes`` (bertkit
    checkpoints, bench keeps finished stages: running the same stage again continues).
    Returns whether it finished; writes ``log_dir/STAGE.json`` (commands, wall time, load)."""
    from _interleave import load_average

    for dep in stage.deps:
        if not finished(stages[dep]) and not run_stage(stages[dep], stages, work, max_minutes,
                                                       log_dir):
            print(f"{stage.name}: waits for {dep}")
            return False
    env = {**os.environ, **{k: v.replace("{work}", str(work)) for k, v in stage.env.items()}}
    if stage.name.startswith("pretrain-"):
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", RAYON_NUM_THREADS="1")
    before, started, stopped = load_average(), time.time(), None
    log_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + 60 * max_minutes if max_minutes else None
    argvs = [[sys.executable if a == "{python}" else a.replace("{work}", str(work)) for a in c]
             for c in stage.commands]
    if stage.name.startswith("bench-") and stage.done.is_dir():
        argvs[-1].append("--resume")  # a stopped bench stage continues from its checkpoint
    for argv in argvs:
        proc = subprocess.Popen(argv, env=env, cwd=ROOT)
        while proc.poll() is None:
            time.sleep(1)
            if deadline and time.time() > deadline and stopped is None:
                proc.send_signal(signal.SIGTERM)
                stopped = f"SIGTERM after {max_minutes} minutes"
        if stopped or proc.returncode != 0:
            stopped = stopped or f"exit {proc.returncode}"
            break
    done = stopped is None and finished(stage)
    record = {"stage": stage.name, "commands": [shlex.join(a) for a in argvs], "finished": done,
              "stopped": stopped, "wall_minutes": round((time.time() - started) / 60, 1),
              "estimate_thread_hours": stage.hours, "load_before": before,
              "load_after": load_average()}
    path = log_dir / f"{stage.name}.json"
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"{stage.name}: {'finished' if done else stopped or 'not finished'} ({path})")
    return done


def export(enc: str, work: Path, out_dir: Path = ENCODERS_DIR) -> Path:
    """Export ``WORK/ENC``'s model as the release ``out_dir/ENC`` with its recipe provenance."""
    from bertkit.bench.release import export_encoder

    how = ENCODERS[enc]
    return export_encoder(work / enc / how["product"], out_dir / enc, enc, overwrite=True,
                          provenance={"recipe": how["recipe"], "set": how.get("sets", []),
                                      "made_by": "benchmarks/reproduce.py (issue 43)",
                                      "pretraining_tokens": sum(how["tokens"])})


# ---------------------------------------------------------------------------------------------
# merge: the table and the issue's questions, from the bench results folder alone

Q2_TASKS = (*SUITE_TASKS, "litbank")  # question 2: across the whole suite
QUESTIONS = [  # (question, encoder, against, tasks)
    ("1. SciBERT beyond BC5CDR: S vs G", "S", "G", ("bc5-chem", "bc5-disease", "jnlpba")),
    ("1. S vs G on the other tasks", "S", "G",
     ("bc5cdr", "chemprot", "ddi", "scicite", "hoc", "litbank", "bc2gm")),
    ("1. DAPT on DDI and HoC: G+D vs G+G", "G+D", "G+G", ("ddi", "hoc")),
    ("1. DAPT on the other tasks: G+D vs G+G", "G+D", "G+G",
     ("bc5cdr", "bc5-chem", "bc5-disease", "jnlpba", "chemprot", "scicite", "litbank", "bc2gm")),
    ("2. From scratch vs continued, same domain tokens: S vs G+D37 (G's vocabulary)", "S",
     "G+D37", Q2_TASKS),
    ("2. S vs G+D37sv (G extended with S's pieces)", "S", "G+D37sv", Q2_TASKS),
    ("2. Half compute: S vs S-half", "S", "S-half", Q2_TASKS),
    ("2. The domain pieces in continued pretraining: G+D37sv vs G+D37", "G+D37sv", "G+D37",
     Q2_TASKS),
    ("64. ModernBERT's architecture at S's tokens, vocabulary and size: M vs S", "M", "S",
     Q2_TASKS),
]


# tasks whose test text the scientific corpus holds (../shared/data/README.md): an encoder
# pretrained on it has seen the test sentences, so its rows are shown but not judged
CONTAMINATED = {"bc2gm": "4,864 of BC2GM's 4,939 test sentences are in the scientific corpus"}


def _cell(v: dict | None) -> str:
    return "-" if not v else f"{v['mean']:.2f} ± {v['sd']:.2f}"


def question_rows(bench: Path, questions=QUESTIONS) -> list[str]:
    """One row per (question, task): the difference of means with the bench verdict
    (almost stochastic order over seeds and the paired bootstrap, ``bench.report.compare``);
    "not measured yet" while either encoder lacks the task's seeds."""
    from bertkit.bench.report import collect, compare

    _, found = collect(bench)
    rows = []
    for text, a, b, tasks in questions:
        for task in tasks:
            ra, rb = found.get(a, {}).get(task), found.get(b, {}).get(task)
            if not ra or not rb:
                rows.append(f"| {text} | {task} | - | - | - | - | - | not measured yet |")
                continue
            from bertkit.bench.stats import summary

            c = compare(ra, rb, bench)
            verdict = c["verdict"]
            if task in CONTAMINATED:  # the contamination check's demonstration, not a claim
                verdict = f"not judged: {CONTAMINATED[task]} (bench: {verdict})"
            sa, sb = (summary([r["score"] for r in x]) for x in (ra, rb))
            boot = c["bootstrap"]
            rows.append(f"| {text} | {task} | {_cell(sa)} | {_cell(sb)} | {c['delta']:+.2f} | "
                        + ("-" if c["eps_min"] is None else f"{c['eps_min']:.2f}") + " | "
                        + (f"{boot['low']:+.2f} .. {boot['high']:+.2f}" if boot else "-")
                        + f" | {verdict} |")
    return rows


def contamination_table(counts: dict[str, dict[str, dict]], tasks: list[str]) -> list[str]:
    """Markdown lines: per encoder, the test examples of each task found verbatim in its
    pretraining corpora (``found / of``, bold where 1% or more), and the corpora."""
    lines = ["", "Test examples found verbatim in each encoder's pretraining corpora "
             "(found / of; bold: 1% or more):", "",
             "| encoder | corpora | " + " | ".join(tasks) + " |",
             "|---|---|" + "---|" * len(tasks)]
    for enc, per_task in counts.items():
        corpora = sorted({Path(c).parent.name + "/" + Path(c).name
                          for v in per_task.values() for c in v.get("corpora", [])})
        cells = []
        for t in tasks:
            c = per_task.get(t)
            cell = "-" if not c else f"{c['found']:,} / {c['of']:,}"
            cells.append(f"**{cell}**" if c and c["found"] >= 0.01 * c["of"] > 0 else cell)
        lines.append(f"| {enc} | {', '.join(corpora) or '-'} | " + " | ".join(cells) + " |")
    return lines


def merge(bench: Path, devgrid: Path | None = None, out: Path | None = None) -> str:
    """Write ``reproduce.md`` (default: in ``bench``) from the bench results: encoders x tasks
    (mean ± sd over seeds, points), each encoder's suite score (BLURB's mean of family means),
    the contamination counts and the questions' verdicts.

    Raises:
        bertkit.errors.BertkitError: ``bench`` holds no bench run.
    """
    from bertkit.bench.report import build

    report = build(bench)
    suite = json.loads((bench / "bench.json").read_text(encoding="utf-8"))["suite"]
    tasks = list(SUITE_TASKS) + [t["name"] for t in suite["tasks"] if t["name"] not in SUITE_TASKS]
    shown = Path(os.path.relpath(bench.resolve(), ROOT)) \
        if bench.resolve().is_relative_to(ROOT) else bench
    lines = ["# Domain adaptation in miniature, through `bertkit bench` (issue 43)", "",
             (f"From `bertkit bench run mini` results in `{shown}` (protocol "
             f"{report['protocol']}, budget {report['budget']}); test scores in points, mean ± "
             "sd over seeds (sample sd); - : not measured yet."), "",
             "| encoder | " + " | ".join(tasks) + " | suite score |",
             "|---|" + "---|" * (len(tasks) + 1)]
    for enc, r in report["encoders"].items():
        score = r.get("suite_score")
        lines.append(f"| {enc} | " + " | ".join(_cell(r["tasks"].get(t)) for t in tasks)
                     + f" | {'-' if score is None else f'{score:.2f}'} |")
    if report["contamination"]:
        lines += contamination_table(report["contamination"], tasks)
    head = ["| question | task | first | second | difference | ASO eps_min | bootstrap 95% | "
            "verdict |", "|---|---|---|---|---|---|---|---|"]
    lines += ["", "## Questions", "", "First: the question's first encoder (mean ± sd over "
              "seeds), second: the one it is compared with.", "", *head, *question_rows(bench)]
    if devgrid is not None and (devgrid / "bench.json").is_file():
        lines += ["", "## 3. Under dev-grid (each encoder its own dev-chosen rate)", "",
                  *head, *question_rows(devgrid, [("3. S vs G under dev-grid", "S", "G",
                                            ("chemprot",))])]
    text = "\n".join(lines) + "\n"
    from bertkit.io import write_text

    write_text(out or bench / "reproduce.md", text)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("action", choices=("plan", "run", "export", "merge"))
    ap.add_argument("stages", nargs="*", help="run: stage names (see plan); export: encoders")
    ap.add_argument("--work", type=Path, default=Path("/tmp/reproduce-mini"),
                    help="recipe runs (vocabularies, checkpoints, models; not committed)")
    ap.add_argument("--bench", type=Path, default=Path("/tmp/reproduce-mini/bench-mini"),
                    help="the bench results folder of the fixed protocol (merge reads it)")
    ap.add_argument("--devgrid", type=Path, default=Path("/tmp/reproduce-mini/bench-devgrid"),
                    help="the bench results folder of the dev-grid protocol (question 3)")
    ap.add_argument("--max-minutes", type=float,
                    help="run: SIGTERM a command after M minutes (run the stage again to go on)")
    ap.add_argument("--log", type=Path, default=Path("/tmp/reproduce-mini/logs"),
                    help="run: each stage's commands, wall time and load as STAGE.json")
    args = ap.parse_args()
    work, bench, devgrid = (p.expanduser().absolute() for p in (args.work, args.bench,
                                                                  args.devgrid))
    stages = build_plan(work, bench, devgrid)
    if args.action == "plan":
        print_plan(stages, work)
    elif args.action == "merge":
        print(merge(bench, devgrid))
    elif args.action == "export":
        for enc in args.stages or ap.error("give encoder names"):
            if enc not in ENCODERS:
                ap.error(f"unknown encoder {enc} (one of {', '.join(ENCODERS)})")
            print(f"wrote {export(enc, work)}")
    else:
        unknown = [s for s in args.stages if s not in stages]
        if unknown or not args.stages:
            ap.error(f"give stage names from `plan` (unknown: {', '.join(unknown) or 'none'})")
        for name in args.stages:
            if finished(stages[name]):
                print(f"{name}: finished, skipped")
            elif not run_stage(stages[name], stages, work, args.max_minutes, args.log):
                sys.exit(1)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))  # _interleave (benchmarks/ is not a package)
    sys.path.insert(0, str(ROOT))
    try:
        main()
    except BrokenPipeError:  # `plan | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
