"""The GPU-ready training step on a CPU (issue 61): no CPU regression, and bf16 where it pays.

Two parts, each a list of ``bertkit finetune ner`` runs of the README's main job (BC5CDR,
``recipes/finetune/bc5cdr-ner-minilm.yaml``), run one after another in one invocation:

- ``rate``: the training rate (``train_sentences_per_second`` of ``results.json``, and the whole
  process's CPU seconds, steadier on a loaded machine with ``--threads 1``) of this tree
  against an older tree (``--old-tree``, a checkout of the commit before the change), both
  ``--precision fp32``, on the first ``--rate-samples`` training sentences for one epoch,
  interleaved old/new ``--pairs`` times (the order alternating), so load drifts hit both sides;
- ``f1``: the whole main job with ``--precision fp32`` and with ``--precision auto`` (bf16 on a
  CPU with AMX-BF16 or AVX512-BF16) for each of ``--seeds``, interleaved; test entity F1 of
  each, and whether bf16's F1 lies within fp32's seed spread.

The machine's load average is recorded before each run. Writes ``--out``/``cpu_step.json`` and
one log per run.

    python benchmarks/cpu_step.py --old-tree /tmp/old --out benchmarks/results/cpu_step/ [--parts rate,f1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = "recipes/finetune/bc5cdr-ner-minilm.yaml"
THREADS = 0  # OMP_NUM_THREADS of each run (0: torch's default); --threads


def cpu_name() -> str:
    flags = set()
    name = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            name = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
    has = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return f"{name} ({', '.join(has)})"


def run(tree: Path, name: str, extra: list[str], out: Path) -> dict:
    """One ``finetune ner`` of the main job from ``tree``; its results and wall time."""
    run_dir = out / "runs" / name
    log = out / f"{name}.log"
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-m", "bertkit", "finetune", "ner", "--data", "bc5cdr",
            "--recipe", str(tree / RECIPE), "-o", str(run_dir), "--overwrite", *extra]
    if THREADS:
        env["OMP_NUM_THREADS"] = str(THREADS)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with log.open("w") as fh:
        rc = subprocess.run(argv, cwd=tree, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - start
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res = json.loads((run_dir / "results.json").read_text()) if rc == 0 else {}
    env_json = run_dir / "environment.json"
    precision = json.loads(env_json.read_text()).get("precision") if env_json.is_file() else None
    row = {"name": name, "tree": str(tree), "rc": rc, "wall_s": round(wall, 1),
           "cpu_s": round(cpu, 1), "threads": THREADS or os.cpu_count(), "load_1min": load,
           "precision": precision, "test_f1": 100 * res["test"]["f1"] if res else None,
           "train_sentences_per_second": res.get("train_sentences_per_second")}
    print(json.dumps(row), flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old-tree", help="A checkout of the commit before the change (rate part).")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "cpu_step"))
    ap.add_argument("--parts", default="rate,f1")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rate-samples", type=int, default=1000)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--threads", type=int, default=0, help="OMP_NUM_THREADS of each run (a "
                    "loaded machine: 1, and compare CPU seconds, whole-process, not wall time).")
    args = ap.parse_args(argv)
    global THREADS
    THREADS = args.threads
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"cpu": cpu_name(), "threads": os.cpu_count(), "tree": str(REPO), "rate": [],
              "f1": []}
    path = out / "cpu_step.json"

    def save() -> None:
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    parts = args.parts.split(",")
    if "rate" in parts and args.old_tree:
        short = ["--precision", "fp32", "--max-train-samples", str(args.rate_samples),
                 "--epochs", "1", "--max-eval-samples", "100"]
        for i in range(args.pairs):
            sides = [("old", Path(args.old_tree)), ("new", REPO)]
            for side, tree in (sides if i % 2 == 0 else sides[::-1]):
                report["rate"].append({"side": side, **run(tree, f"rate_{side}_{i + 1}", short, out)})
                save()
        rates = {s: [r["train_sentences_per_second"] for r in report["rate"] if r["side"] == s]
                 for s in ("old", "new")}
        report["rate_median"] = {s: statistics.median(v) for s, v in rates.items() if v}
        cpu = {s: [r["cpu_s"] for r in report["rate"] if r["side"] == s and r["rc"] == 0]
               for s in ("old", "new")}
        report["cpu_s_median"] = {s: statistics.median(v) for s, v in cpu.items() if v}
        if len(report["cpu_s_median"]) == 2:  # same work both sides: CPU seconds, old / new
            report["cpu_ratio_old_over_new"] = (report["cpu_s_median"]["old"]
                                                / report["cpu_s_median"]["new"])
        if len(report["rate_median"]) == 2:
            report["rate_ratio_new_over_old"] = (report["rate_median"]["new"]
                                                 / report["rate_median"]["old"])
        save()
    if "f1" in parts:
        for seed in args.seeds.split(","):
            for precision in ("fp32", "auto"):
                report["f1"].append(run(REPO, f"main_{precision}_seed{seed}",
                                        ["--precision", precision, "--seed", seed], out))
                save()
        by = {p: [r["test_f1"] for r in report["f1"] if r["name"].startswith(f"main_{p}_")
                  and r["test_f1"] is not None] for p in ("fp32", "auto")}
        report["f1_summary"] = {p: {"mean": statistics.mean(v), "min": min(v), "max": max(v),
                                    "seeds": v} for p, v in by.items() if v}
        if by["fp32"] and by["auto"]:
            lo, hi = min(by["fp32"]), max(by["fp32"])
            report["auto_within_fp32_spread"] = all(lo <= f <= hi for f in by["auto"])
            report["auto_mean_minus_fp32_mean"] = statistics.mean(by["auto"]) - statistics.mean(
                by["fp32"])
        save()
    print(json.dumps({k: v for k, v in report.items() if k not in ("rate", "f1")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
