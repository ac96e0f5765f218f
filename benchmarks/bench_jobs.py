"""`bertkit bench run --jobs 1` against `--jobs 2`: the wall time of one small suite run each way
(issue 43: "Measure a suite's wall time with --jobs 1 and --jobs 2 on this 2-core machine").

The same suite, encoder, budget and seeds every time; each run into a fresh results folder (no
finished stage kept); the two settings interleaved (1, 2, then 2, 1, ...) over ``--repeats``; the
load average before and after each run recorded, as the machine may be shared. ``--jobs 1``
runs the fine-tunes one after another with every core; ``--jobs N`` runs N side by side with
``OMP_NUM_THREADS`` = cores / N each (bench's runner). Writes
``benchmarks/results/bench_jobs/bench_jobs.json``: each run's wall seconds and load, and per
setting the median (min-max) and the ratio of medians.

    python benchmarks/bench_jobs.py --dry-run            # the runs and commands, nothing run
    python benchmarks/bench_jobs.py --repeats 3          # about 3 x 2 x 10 minutes on 2 cores

The default suite (written to the work folder) is two of ``mini``'s tasks at small caps
(BC5CDR NER and SciCite, 500 training examples, one epoch, seeds 1-2: four fine-tunes, so two
jobs always have two independent stages) on the packaged MiniLM.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interleave import load_average, shared_note, side_order, spread

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "bench_jobs" / "bench_jobs.json"
SUITE = """\
# benchmarks/bench_jobs.py: a small suite for timing bench run --jobs (not a benchmark of scores)
name: bench-jobs
description: two of mini's tasks at small caps, for timing --jobs
protocol: fixed
seeds: [1, 2]
defaults: {max_length: 128, epochs: 1, precision: fp32}
tasks:
  - {name: bc5cdr, task: ner, data: bc5cdr, metric: entity_f1, family: ner,
     recipe: {lr: 1.0e-4, max_train_samples: 500}}
  - {name: scicite, task: cls, data: scicite, metric: macro_f1, family: cls,
     recipe: {lr: 1.0e-4, max_train_samples: 500}}
"""


def command(suite: str, encoder: str, jobs: int, out: Path) -> list[str]:
    """The ``bertkit bench run`` command line of one timed run."""
    return [sys.executable, "-m", "bertkit", "bench", "run", suite, "--encoder", encoder,
            "--jobs", str(jobs), "--no-report", "-o", str(out)]


def plan(jobs: list[int], repeats: int) -> list[tuple[int, int]]:
    """``(repeat, jobs)`` in running order: the settings interleaved, reversed on odd repeats."""
    return [(r, int(j)) for r in range(repeats)
            for j in side_order([str(j) for j in jobs], r)]


def summarise(runs: list[dict], jobs: list[int]) -> dict:
    """Per ``--jobs`` setting: wall seconds (median, min, max, n) of the finished runs, and the
    ratio of the medians of the first setting to each other (> 1: the other is faster)."""
    out: dict = {}
    for j in jobs:
        walls = [r["wall_s"] for r in runs if r["jobs"] == j and r["returncode"] == 0]
        out[str(j)] = {"median_s": statistics.median(walls) if walls else None,
                       "min_s": min(walls, default=None), "max_s": max(walls, default=None),
                       "n": len(walls), "spread": spread(walls) if walls else "-"}
    first = out[str(jobs[0])]["median_s"]
    for j in jobs[1:]:
        m = out[str(j)]["median_s"]
        out[str(j)]["speedup_vs_first"] = round(first / m, 3) if first and m else None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", help="a suite name or file (default: the small suite above)")
    ap.add_argument("--encoder", default="minilm=minilm", help="NAME=MODEL (default: minilm)")
    ap.add_argument("--jobs", default="1,2", help="the --jobs settings compared (default 1,2)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each setting (default 3)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_jobs"),
                    help="results folders of the runs (removed before each run)")
    ap.add_argument("--out", type=Path, default=OUT, help=f"the JSON (default {OUT})")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the runs in order and their commands; run and write nothing")
    args = ap.parse_args(argv)
    jobs = [int(j) for j in args.jobs.split(",")]
    if len(jobs) < 2 or args.repeats < 1:
        ap.error("--jobs needs two settings or more and --repeats one or more")
    suite = args.suite or str(args.work / "bench-jobs.yaml")
    order = plan(jobs, args.repeats)
    if args.dry_run:
        for r, j in order:
            out = args.work / f"jobs{j}-r{r}"
            print(f"repeat {r} --jobs {j}: " + " ".join(command(suite, args.encoder, j, out)))
        print(f"# would write {args.out}; {len(order)} runs; suite "
              f"{'(written to ' + suite + ')' if not args.suite else suite}")
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    if not args.suite:
        Path(suite).write_text(SUITE, encoding="utf-8")
    runs = []
    for r, j in order:
        out = args.work / f"jobs{j}-r{r}"
        shutil.rmtree(out, ignore_errors=True)
        before = load_average()
        start = time.perf_counter()
        done = subprocess.run(command(suite, args.encoder, j, out), capture_output=True,
                              text=True)
        wall = time.perf_counter() - start
        runs.append({"repeat": r, "jobs": j, "wall_s": round(wall, 1),
                     "returncode": done.returncode, "load_before": before,
                     "load_after": load_average(),
                     "stderr_tail": done.stderr[-400:] if done.returncode else ""})
        print(f"repeat {r} --jobs {j}: {wall:.0f} s (exit {done.returncode}, load "
              f"{before['load_1m']} -> {runs[-1]['load_after']['load_1m']})", flush=True)
    before = max(x["load_before"]["load_1m"] for x in runs)
    after = max(x["load_after"]["load_1m"] for x in runs)
    result = {"suite": args.suite or SUITE, "encoder": args.encoder, "jobs": jobs,
              "repeats": args.repeats, "runs": runs, "summary": summarise(runs, jobs),
              "machine": load_average(),
              "note": shared_note(before, after, max(jobs))}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(json.dumps(result["summary"], indent=1))
    return 0 if all(x["returncode"] == 0 for x in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
