"""``predict ner`` at corpus scale (issue 48): memory, wall time, --jobs, kill-and-resume, and the
side-by-side speed rows. A skeleton: ``--dry-run`` prints the plan and the commands and runs
nothing; run it for real only on an idle machine (it takes hours at 1 M sentences on 2 cores).

Two parts:

* ``scale``: the scientific corpus (``$BERTKIT_DATA/corpus/train.txt``, one sentence a line,
  122 k lines, ~29 words each) repeated to each ``--sizes`` line count, predicted with
  ``bertkit predict ner`` in a child process at one thread (``OMP_NUM_THREADS=1``): wall time,
  sentences/s and peak RSS (``os.wait4``'s ``ru_maxrss`` of that child) per size; then at the
  largest size ``--jobs 2`` against ``--jobs 1``; then a run killed (SIGKILL) once its state file
  shows half the records and continued with ``--resume``, compared byte for byte with the
  uninterrupted output; then (row ``shard``) ``--shard 1/K`` of the largest input: every
  line read, 1/K of the chunks predicted, so peak RSS with a 1 M-line input costs 1/K of its
  wall time.
* ``speed``: interleaved repeats on BC5CDR test, one thread, process CPU time per row: the best
  stock row (``Trainer.predict`` length-sorted, batch 32: ``ner_predict_speed.py``'s
  ``stock_predict``), bertkit's current path (batches of 32 windows), token-budget batches
  (``--batch-tokens``), packing short sentences into one row (``--pack``, block-diagonal
  attention as training's ``bertkit/inputs/packing.py``), ONNX Runtime fp32 (``--backend onnx``) and
  with ``--int8`` its int8 dynamic quantisation. Every fp32 bertkit row must give exactly the
  tags of bertkit's default path (checked, untimed); ``benchmarks/_predict_speed.py`` has the rows.

Usage (BC5CDR model from ``bertkit finetune ner --data bc5cdr -o runs/bc5cdr``):
    python benchmarks/predict_stream.py scale --model runs/bc5cdr --sizes 10000,1000000 \\
        --work /tmp/predict-scale --json benchmarks/results/predict_stream/predict_stream_scale.json
    python benchmarks/predict_stream.py speed --model runs/bc5cdr --repeat 5 --batch-tokens 4096 \\
        --int8 --int8-f1 --json benchmarks/results/predict_stream/predict_stream_speed.json
    python benchmarks/predict_stream.py scale --model runs/bc5cdr --dry-run
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCALE_ROWS = ("sizes", "jobs", "resume", "shard")
SPEED_ROWS = ("stock b32 sorted", "bertkit b32", "bertkit tokens", "bertkit packed",
              "onnxruntime fp32", "onnxruntime fp32 tokens", "onnxruntime int8 (--int8)")


def corpus_input(source: Path, lines: int, out: Path) -> Path:
    """``source``'s lines repeated until ``lines`` lines, written to ``out`` (kept if present)."""
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with source.open(encoding="utf-8") as f:
        base = [line for line in f if line.strip()]
    with out.open("w", encoding="utf-8") as f:
        for i in range(lines):
            f.write(base[i % len(base)])
    return out


def predict_command(model: str, inp: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bertkit", "predict", "ner", "-m", model, "-i", str(inp),
            "-o", str(out), "--device", "cpu", *extra]


def run_measured(cmd: list[str], kill_at: int | None = None, state: Path | None = None) -> dict:
    """Run ``cmd`` at one thread: wall seconds, peak RSS (MiB) and exit code; with ``kill_at``,
    SIGKILL it once ``state`` records that many records."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    while kill_at is not None and proc.poll() is None:
        time.sleep(1)
        try:
            if json.loads(state.read_text())["records"] >= kill_at:
                os.kill(proc.pid, signal.SIGKILL)
                break
        except (OSError, ValueError, KeyError):
            continue
    _, status, usage = os.wait4(proc.pid, 0)
    return {"wall_s": round(time.perf_counter() - start, 1), "peak_rss_mib":
            round(usage.ru_maxrss / 1024, 1), "exit": os.waitstatus_to_exitcode(status)}


def scale_plan(args) -> list[tuple[str, list[str], dict]]:
    """``(name, command, options)`` of every scale measurement, in order."""
    work, sizes = Path(args.work), [int(s) for s in args.sizes.split(",")]
    rows = set(args.rows.split(","))
    unknown = rows - set(SCALE_ROWS)
    if unknown:
        raise SystemExit(f"unknown --rows {sorted(unknown)}: expected some of {SCALE_ROWS}")
    plan = []
    for n in sizes if "sizes" in rows else []:
        inp = work / f"corpus-{n}.txt"
        plan.append((f"{n} sentences", predict_command(args.model, inp, work / f"out-{n}.conll"),
                     {"lines": n}))
    n = sizes[-1]
    inp = work / f"corpus-{n}.txt"
    if "jobs" in rows:
        plan.append((f"{n} sentences --jobs 2", predict_command(
            args.model, inp, work / f"out-{n}-jobs2.conll", "--jobs", "2"),
            {"lines": n, "compare": work / f"out-{n}.conll"}))
    if "resume" in rows:
        killed = work / f"out-{n}-killed.conll"
        plan.append((f"{n} sentences killed at half", predict_command(args.model, inp, killed),
                     {"lines": n, "kill_at": n // 2, "state": Path(str(killed) + ".state.json")}))
        plan.append((f"{n} sentences resumed", predict_command(args.model, inp, killed,
                                                                "--resume"),
                     {"lines": n, "compare": work / f"out-{n}.conll", "resumed": True}))
    if "shard" in rows:  # memory with the whole largest input read, 1/K of it predicted
        k = args.shard_of
        plan.append((f"{n} sentences --shard 1/{k}", predict_command(
            args.model, inp, work / f"out-{n}-shard1of{k}.conll", "--shard", f"1/{k}"),
            {"lines": n, "predicted": n // k}))
    return plan


def scale(args) -> dict:
    source = Path(os.environ.get("BERTKIT_DATA", ROOT / "data")) / "corpus" / "train.txt"
    results = {}
    for name, cmd, opt in scale_plan(args):
        if args.dry_run:
            print(f"{name}: {' '.join(cmd)}" + (f"  (SIGKILL at {opt['kill_at']} records)"
                                                 if "kill_at" in opt else ""))
            continue
        corpus_input(source, opt["lines"], Path(args.work) / f"corpus-{opt['lines']}.txt")
        load_before = os.getloadavg()[0]
        row = run_measured(cmd, opt.get("kill_at"), opt.get("state"))
        row["load_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        if row["exit"] == 0 and "kill_at" not in opt and "resumed" not in opt:
            row["sentences_per_s"] = round(opt.get("predicted", opt["lines"]) / row["wall_s"], 1)
        if "compare" in opt:
            row["same_bytes"] = Path(cmd[cmd.index("-o") + 1]).read_bytes() == \
                opt["compare"].read_bytes()
        results[name] = row
        print(name, row, flush=True)
        if args.json:  # after every row: a stopped run keeps what it measured
            write_json(args.json, results)
    return results


def write_json(path: str, results: dict) -> None:
    Path(path).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def speed(args) -> dict:
    """The side-by-side rows (``benchmarks/_predict_speed.py``)."""
    if args.dry_run:
        for row in SPEED_ROWS:
            print(f"{row}: measured")
        return {}
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _predict_speed import run

    return run(args)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("scale", "speed"), help="What to measure.")
    parser.add_argument("--model", default="runs/bc5cdr",
                        help="Saved NER run or model folder (default: runs/bc5cdr).")
    parser.add_argument("--sizes", default="10000,1000000",
                        help="scale: input sizes in sentences, comma-separated; the last gets "
                             "the --jobs and kill-and-resume runs (default: 10000,1000000).")
    parser.add_argument("--work", default="/tmp/predict-scale",
                        help="scale: folder for the inputs and outputs (default: "
                             "/tmp/predict-scale).")
    parser.add_argument("--rows", default=",".join(SCALE_ROWS),
                        help="scale: which rows: sizes (one run per --sizes), jobs (--jobs 2 at "
                             "the largest size, compared with its --jobs 1 output), resume "
                             "(killed at half and resumed), shard (--shard 1/K of the largest input); "
                             "comma-separated (default: all).")
    parser.add_argument("--shard-of", type=int, default=10,
                        help="scale: the shard row predicts shard 1 of this many of the largest "
                             "--sizes input, reading all of it (default: 10).")
    parser.add_argument("--repeat", type=int, default=5, help="speed: repeats (default: 5).")
    parser.add_argument("--batch-tokens", type=int, default=4096,
                        help="speed: the token budget of the 'bertkit tokens' row (default: "
                             "4096).")
    parser.add_argument("--pack", type=int, default=128,
                        help="speed: pieces per packed row of 'bertkit packed' (default: 128).")
    parser.add_argument("--max-test", type=int, default=None,
                        help="speed: the first N BC5CDR test sentences only (default: all).")
    parser.add_argument("--int8", action="store_true",
                        help="speed: also time ONNX Runtime int8 dynamic quantisation.")
    parser.add_argument("--int8-f1", action="store_true",
                        help="speed: also score ONNX fp32 and int8 on the full test set.")
    parser.add_argument("--json", help="Also write the results as JSON here.")
    parser.add_argument("--dry-run", action="store_true",
                        help="Print the plan and commands; run nothing.")
    args = parser.parse_args(argv)
    results = scale(args) if args.part == "scale" else speed(args)
    if args.json and not args.dry_run:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
