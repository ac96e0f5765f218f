"""Choose each side's learning rate for ``re_vs_stock.py``'s ``-tuned`` rows on ChemProt dev only.

For each learning rate of ``--lrs`` (and, for bertkit, each pooling of ``--poolings``) one run of
each side in ``--sides``, exactly as ``benchmarks/re_vs_stock.py`` runs it (same functions, same
epochs, batch size and seed): ``stock`` (the Trainer recipe, random batches, scored with its last
epoch, as it keeps that one), ``stock-grouped`` (the same with length-grouped batches: 2.4x
faster here, the same test score at 5e-5; its rate serves re_vs_stock's ``stock-grouped-tuned``
row) and ``bertkit`` (``finetune_re`` with bertkit's recipe, scored with
its best dev epoch, as it keeps that one). Only dev micro-F1 (and macro-F1) is printed and ranked;
the test split is never read: the temporary data folder's ``test.jsonl`` holds only the first dev
pair (``finetune_re`` needs the file). The sides alternate per grid point (``side_order``) and
every run records the load average before and after. The best rate per side is printed as the
``--stock-tuned-lr`` / ``--bertkit-tuned-lr`` flags for ``re_vs_stock.py``.

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/re_dev_sweep.py --threads 1 \\
        [--sides stock,bertkit --lrs 2e-5,5e-5,1e-4,2e-4 --poolings cls --seed 1 --epochs 3 \\
         --batch-size 32 --max-train N --max-dev N] [--name re_dev_sweep] [--json OUT]
Merge (a point added to a sweep whose best rate was at the edge of its grid):
    ... re_dev_sweep.py --merge A.json B.json --name NAME [--json OUT]
Smoke:
    ... re_dev_sweep.py --max-train 60 --max-dev 30 --epochs 1 --lrs 5e-5,2e-4 --threads 1 \\
        --name /tmp/re_dev_sweep_smoke
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interleave import (load1, logger, read_same_settings, shared_note, side_order,  # noqa: E402
                         subset_dir)
from re_vs_stock import FULL, RESULTS, bertkit_run, source_dir, stock_run  # noqa: E402
from bertkit.tasks.re import REConfig  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="chemprot", help="under $BERTKIT_DATA/re/, or a folder")
    ap.add_argument("--sides", default="stock,bertkit",
                    help="comma-separated subset of stock, stock-grouped, bertkit")
    ap.add_argument("--lrs", default="2e-5,5e-5,1e-4,2e-4", help="comma-separated learning rates")
    ap.add_argument("--poolings", default=REConfig.pooling,
                    help="bertkit's poolings to try (comma-separated: cls,entity-start)")
    ap.add_argument("--epochs", type=int, default=FULL["epochs"])
    ap.add_argument("--batch-size", type=int, default=FULL["batch_size"])
    ap.add_argument("--eval-batch-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--max-train", type=int, default=None, help="first N training pairs only")
    ap.add_argument("--max-dev", type=int, default=None, help="first N dev pairs only")
    ap.add_argument("--name", default="re_dev_sweep",
                    help="log benchmarks/results/re_vs_stock/<name>.log (an absolute path goes there)")
    ap.add_argument("--json", type=Path, default=None, help="also write all figures here")
    ap.add_argument("--merge", type=Path, nargs="+", default=None,
                    help="rank the points of these --json files together (no training)")
    args = ap.parse_args()
    if args.merge:
        merge(args.merge, args.name, args.json)
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    sides = tuple(args.sides.split(","))
    if not sides or any(s not in ("stock", "stock-grouped", "bertkit") for s in sides):
        sys.exit(f"error: --sides {args.sides}: a subset of stock, stock-grouped, bertkit")
    lrs = [float(x) for x in args.lrs.split(",")]
    poolings = args.poolings.split(",")
    src = source_dir(args.data)
    log = logger(RESULTS / f"{args.name}.log")
    log(f"dev only (test never read); {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; command: python "
        + " ".join(sys.argv))
    log(f"torch {torch.__version__}, {threads} threads, {os.cpu_count()} CPUs; data {src}; "
        f"train/dev first {args.max_train}/{args.max_dev} (None = all); epochs {args.epochs}, "
        f"batch {args.batch_size}, seed {args.seed}; load {load1()}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = subset_dir(src, Path(tmp) / "data", {"train": args.max_train, "dev": args.max_dev})
        first_dev = (d / "dev.jsonl").read_text(encoding="utf-8").splitlines()[0]
        (d / "test.jsonl").write_text(first_dev + "\n", encoding="utf-8")  # the test file: unused
        points = [(side, lr, pooling) for lr in lrs for pooling in poolings
                  for side in sides if side == "bertkit" or pooling == poolings[0]]
        for k, lr in enumerate(lrs):
            for side, _, pooling in side_order([p for p in points if p[1] == lr], k):
                before, out = load1(), f"{tmp}/{side}-{lr}-{pooling}"
                if side.startswith("stock"):
                    r = stock_run(d, args, args.seed, lr, side == "stock-grouped", out, split="dev")
                else:
                    r = bertkit_run(d, args, args.seed, lr, out, pooling)
                row = {"side": side, "lr": lr, "pooling": pooling if side == "bertkit" else None,
                       "dev_micro_f1": 100 * r["dev"]["micro_f1"],
                       "dev_macro_f1": 100 * r["dev"]["macro_f1"],
                       "epoch": r.get("best_epoch", args.epochs),
                       "train_seconds": r["train_seconds"], "load_before": before,
                       "load_after": load1()}
                rows.append(row)
                what = f"bertkit ({pooling})" if side == "bertkit" else side
                log(f"{what:<22} lr {lr:.0e}  dev micro-F1 {row['dev_micro_f1']:6.2f}  macro-F1 "
                    f"{row['dev_macro_f1']:6.2f}  ({'best' if side == 'bertkit' else 'last'} "
                    f"epoch {row['epoch']})  train {row['train_seconds']:.0f} s  "
                    f"{shared_note(before, row['load_after'], threads)}")
                if args.json:  # after every point, so a stopped sweep keeps what it measured
                    args.json.parent.mkdir(parents=True, exist_ok=True)
                    args.json.write_text(json.dumps({"args": vars(args), "runs": rows},
                                                    indent=2, default=str) + "\n")
    report_best(rows, sides, log, args.json, vars(args))


def report_best(rows: list[dict], sides, log, json_path: Path | None, saved_args: dict) -> None:
    """Log the best learning rate per side (dev micro-F1) and the flags for re_vs_stock.py."""
    best = {s: max((r for r in rows if r["side"] == s), key=lambda r: r["dev_micro_f1"])
            for s in sides}
    log("")
    for s, b in best.items():
        lrs = sorted({r["lr"] for r in rows if r["side"] == s})
        edge = " (at the edge of the grid)" if len(lrs) > 1 and b["lr"] in (lrs[0], lrs[-1]) else ""
        log(f"best on dev, {s}: lr {b['lr']:g}{', pooling ' + b['pooling'] if b['pooling'] else ''}"
            f" (dev micro-F1 {b['dev_micro_f1']:.2f}){edge}")
    flag = {"stock": "--stock-tuned-lr", "bertkit": "--bertkit-tuned-lr",
            "stock-grouped": "--stock-tuned-lr (for the stock-grouped-tuned side)"}
    log("re_vs_stock.py flags: " + "; ".join(f"{flag[s]} {b['lr']:g}" for s, b in best.items())
        + f"; load {load1()}; log {log.path}")
    if json_path:
        json_path.write_text(json.dumps({"args": saved_args, "runs": rows, "best": best},
                                        indent=2, default=str) + "\n")


def merge(paths: list[Path], name: str, json_path: Path | None) -> None:
    """Rank the grid points of several ``--json`` files of this script together (e.g. a point
    added to a sweep whose best rate was at the edge of its grid); every setting but the rates,
    sides, poolings, name, threads and JSON path must agree."""
    free = {"lrs", "sides", "poolings", "name", "json", "threads", "merge"}
    saved = read_same_settings(paths, free)
    first = {k: v for k, v in saved[0]["args"].items() if k not in free}
    log = logger(RESULTS / f"{name}.log")
    log(f"dev only; merged {len(paths)} sweeps: " + ", ".join(str(p) for p in paths))
    rows = []
    for run in saved:
        rows += run["runs"]
    sides = list(dict.fromkeys(r["side"] for r in rows))
    for r in sorted(rows, key=lambda r: (sides.index(r["side"]), r["lr"])):
        what = f"bertkit ({r['pooling']})" if r["side"] == "bertkit" else r["side"]
        log(f"{what:<22} lr {r['lr']:.0e}  dev micro-F1 {r['dev_micro_f1']:6.2f}  macro-F1 "
            f"{r['dev_macro_f1']:6.2f}  (epoch {r['epoch']})  train {r['train_seconds']:.0f} s  "
            f"load {r['load_before']}->{r['load_after']}")
    report_best(rows, sides, log, json_path, {"merge": [str(p) for p in paths], **first})

if __name__ == "__main__":
    main()
