"""PICO span extraction on EBM-NLP with the packaged MiniLM: token-level macro-F1 (SciBERT's PICO
figure) and span F1, mean and spread over seeds, from one ``bertkit finetune ner`` command.

Runs ``bertkit finetune ner --data ebmnlp --metric token-macro --recipe bc5cdr-ner-minilm
--seeds S`` (the BC5CDR recipe's optimiser settings: lr 2e-4, warm-up 10%, weight decay 0.01,
CRF; best epoch by dev token macro-F1) in a subprocess, records the 1-minute load average before
and after, and prints the ``summary.json`` figures (mean, sample standard deviation, min-max over
seeds) beside SciBERT's published figure (BERT-base SciBERT, full EBM-NLP training data: 71.18
token macro-F1; not the same model or budget, a reference point only).

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/pico_ebmnlp.py --epochs 1 --seeds 1,2,3 \\
        [--threads 1] [--max-train-samples N --max-eval-samples N] [--json OUT] [--name LOG]
    python benchmarks/pico_ebmnlp.py --from-json OUT   # reprint a saved run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCIBERT_PICO = 71.18


RESULTS = Path(__file__).resolve().parent / "results" / "pico_ebmnlp"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interleave import load1, logger  # noqa: E402


def report(summary: dict, epochs: int, wall: float, before: float, after: float, log) -> dict:
    """Print the test figures of a ``summary.json`` (mean, sd, min-max in points); return them."""
    test = summary["metrics"]["test"]
    log(f"EBM-NLP test over seeds {summary['seeds']} ({epochs} epoch(s); selected by dev "
        f"{summary['select_metric']}); wall {wall:.0f} s; load {before}->{after}")
    rows = {}
    for key, name in (("token_macro_f1", "token macro-F1 (PICO)"), ("f1", "span F1 (strict)")):
        s = test[key]
        values = [100 * v for v in s["values"]]
        rows[key] = {"mean": 100 * s["mean"], "std": 100 * (s["std"] or 0.0),
                     "min": min(values), "max": max(values), "values": values}
        log(f"  {name:<24} mean {rows[key]['mean']:6.2f}  sd {rows[key]['std']:5.2f}  "
            f"(min {rows[key]['min']:.2f}, max {rows[key]['max']:.2f})")
    log(f"  SciBERT (BERT-base, full training data), token macro-F1: {SCIBERT_PICO}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-train-samples", type=int, default=None)
    ap.add_argument("--max-eval-samples", type=int, default=None, help="smoke runs only")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--name", default="pico_ebmnlp", help="log name (<log-dir>/<name>.log)")
    ap.add_argument("--log-dir", type=Path, default=RESULTS)
    ap.add_argument("--from-json", type=Path, default=None,
                    help="only print (and log) the figures of an earlier run's --json file")
    args = ap.parse_args()
    log = logger(args.log_dir / f"{args.name}.log")

    if args.from_json:
        saved = json.loads(args.from_json.read_text(encoding="utf-8"))
        log(f"re-rendered from {args.from_json} (figures as the run saved them); run arguments: "
            f"{saved['args']}")
        report(saved["summary"], saved["args"]["epochs"], saved["wall_seconds"],
               saved["load_before"], saved["load_after"], log)
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), TOKENIZERS_PARALLELISM="false")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "bertkit", "finetune", "ner", "--data", "ebmnlp",
               "--metric", "token-macro", "--recipe", "bc5cdr-ner-minilm",
               "--epochs", str(args.epochs), "--seeds", args.seeds, "--output-dir", f"{tmp}/run"]
        if args.max_train_samples:
            cmd += ["--max-train-samples", str(args.max_train_samples)]
        if args.max_eval_samples:
            cmd += ["--max-eval-samples", str(args.max_eval_samples)]
        before, start = load1(), time.perf_counter()
        log(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; {args.threads} thread(s), "
            f"{os.cpu_count()} CPUs; load {before}; running: "
            + " ".join(cmd[1:]).replace(tmp, "TMP"))
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall, after = time.perf_counter() - start, load1()
        if done.returncode:
            sys.exit(f"finetune failed ({done.returncode}):\n{done.stdout[-3000:]}"
                     f"\n{done.stderr[-3000:]}")
        summary = json.loads(Path(f"{tmp}/run/summary.json").read_text(encoding="utf-8"))
    rows = report(summary, args.epochs, wall, before, after, log)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "wall_seconds": wall, "load_before": before,
                                         "load_after": after, "test": rows,
                                         "summary": summary}, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
