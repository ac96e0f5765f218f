"""Choose a sentence-classification recipe on dev only: a small grid of learning rate and class
weighting, one fine-tuning run per point, ranked by the best-epoch dev macro-F1.

Each point runs ``finetune_cls`` (the ``bertkit finetune cls`` body) with the given epochs, batch
size, maximum length, linear warm-up share and weight decay; only the dev score is printed and
ranked (test is never looked at here, so choosing on this table is choosing on dev). The winning
settings go into ``recipes/finetune/<set>-cls-minilm.yaml``; ``benchmarks/cls_vs_stock.py`` then
measures the recipe against the stock Trainer on test.

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/cls_dev_sweep.py --data acl-arc \\
        --lrs 1e-4,2e-4 --class-weights none,balanced --epochs 4 --batch-size 32 \\
        --max-length 128 [--max-train N] [--seed 1] [--threads 1] [--json OUT]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.tasks.cls import CLSConfig, finetune_cls  # noqa: E402


from _interleave import load1  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="acl-arc")
    ap.add_argument("--lrs", default="5e-5,1e-4,2e-4", help="comma-separated learning rates")
    ap.add_argument("--class-weights", default="none", help="comma-separated: none,balanced")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--warmup", type=float, default=0.1)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--max-train", type=int, default=None, help="first N training texts only")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    lrs = [float(x) for x in args.lrs.split(",")]
    weights = args.class_weights.split(",")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} CPUs; "
          f"data {args.data}; epochs {args.epochs}, batch {args.batch_size}, max length "
          f"{args.max_length}, warm-up {args.warmup}, weight decay {args.weight_decay}, train "
          f"first {args.max_train} (None = all), seed {args.seed}; load {load1()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (lr, cw) in enumerate(itertools.product(lrs, weights)):
            before, start = load1(), time.perf_counter()
            cfg = CLSConfig(data=args.data, epochs=args.epochs, lr=lr, batch_size=args.batch_size,
                            seed=args.seed, output_dir=f"{tmp}/run{k}", max_length=args.max_length,
                            warmup=args.warmup, weight_decay=args.weight_decay,
                            class_weights=cw, max_train_samples=args.max_train,
                            logging_steps=10**9)
            r = finetune_cls(cfg, console=None)
            records = [json.loads(x) for x in
                       (Path(tmp) / f"run{k}" / "metrics.jsonl").read_text().splitlines()
                       if x.strip()]
            per_epoch = [round(100 * x["macro_f1"], 2) for x in records
                         if x.get("type") == "eval" and x.get("split") == "dev"
                         and "macro_f1" in x]
            row = {"lr": lr, "class_weights": cw, "dev_macro_f1": 100 * r["dev"]["macro_f1"],
                   "best_epoch": r["best_epoch"], "dev_per_epoch": per_epoch,
                   "wall_seconds": time.perf_counter() - start, "load_before": before,
                   "load_after": load1()}
            rows.append(row)
            print(f"lr {lr:.0e}  class weights {cw:<8}  dev macro-F1 {row['dev_macro_f1']:6.2f} "
                  f"(best epoch {row['best_epoch']}; per epoch {per_epoch})  "
                  f"{row['wall_seconds']:.0f} s  load {before}->{row['load_after']}", flush=True)
            if args.json:  # after every point, so a stopped sweep keeps what it measured
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                                 "runs": rows}, indent=2) + "\n")
    best = max(rows, key=lambda x: x["dev_macro_f1"])
    print(f"\nbest on dev: lr {best['lr']:.0e}, class weights {best['class_weights']} "
          f"(dev macro-F1 {best['dev_macro_f1']:.2f}, epoch {best['best_epoch']}); load {load1()}",
          flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "runs": rows, "best": best}, indent=2) + "\n")


if __name__ == "__main__":
    main()
