"""bertkit vs the stock Hugging Face recipe for sentence classification (SciCite, ACL-ARC), in one run.

Stock recipe (``examples/pytorch/text-classification/run_glue.py`` with its defaults):
``AutoModelForSequenceClassification`` ([CLS] -> pooler -> linear), texts tokenised with
``truncation=True`` at ``--max-length``, padded as ``run_glue.py`` does by default
(``pad_to_max_length=True``: every input padded to ``--max-length``; ``--stock-padding dynamic``
uses ``DataCollatorWithPadding`` instead), ``Trainer`` with random batches, the last epoch kept,
``Trainer.predict`` with the evaluation batch raised to ``--eval-batch-size``; the Trainer's
defaults for the rest: learning rate ``--stock-lr`` (5e-5), no warm-up, no weight decay, linear
decay, clipping 1.0.
bertkit: ``finetune_cls`` (length-grouped batches padded per batch, head+tail for long texts,
best epoch on dev macro-F1) with the same model, data, epochs, batch size, seed and maximum
length, and its own recipe for the rest (``--bertkit-recipe``: learning rate, warm-up, weight
decay and class weights of ``recipes/finetune/<name>.yaml``, chosen on dev by
``benchmarks/cls_dev_sweep.py``; without it ``--lr`` and the Trainer's defaults).
``--isolate`` adds a third side, bertkit's code with the stock settings (``--stock-lr``, no warm-up,
no weight decay, no class weights), which separates the recipe's effect from the implementation's.

Sides alternate (seed 1: stock first, seed 2: bertkit first, ...) so a change of machine load
hits both; the 1-minute load average is recorded before and after each run. For each side the
median and spread (min-max) over the seeds of test macro-F1 (SciBERT's metric) and training
throughput (texts/s; bertkit's from the per-epoch training records, evaluation excluded; the
Trainer's ``train()`` wall time for stock) are printed, with the ratio of the medians.

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/cls_vs_stock.py --data scicite \\
        [--max-train 2000 --max-dev 400 --max-test 1000 --epochs 1 --batch-size 16 \\
         --max-length 128 --seeds 1,2,3 --stock-padding max_length|dynamic --threads 1] \\
        [--bertkit-recipe scicite-cls-minilm | --lr 1e-4] [--stock-lr 5e-5] [--isolate] [--json OUT]
        [--name LOG]   # printed lines also go to benchmarks/results/cls_vs_stock/<LOG>.log
    python benchmarks/cls_vs_stock.py --data acl-arc --from-json OUT  # reprint a saved run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
RESULTS = Path(__file__).resolve().parent / "results" / "cls_vs_stock"

from _interleave import load1, logger, read_split, side_order, spread, subset_dir  # noqa: E402
from _stock import stock_training_args  # noqa: E402
from bertkit.data.sets import data_root  # noqa: E402
from bertkit.encoders import default_model, quiet_transformers  # noqa: E402
from bertkit.metrics.cls import label_scores  # noqa: E402
from bertkit.tasks.cls import CLSConfig, finetune_cls  # noqa: E402


def stock_recipe(d: Path, args, seed: int, out: str) -> dict:
    """The stock Trainer recipe; returns test scores and timings."""
    import datasets
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                              DataCollatorWithPadding, Trainer, set_seed)

    quiet_transformers()
    datasets.disable_progress_bars()
    train, test = read_split(d, "train"), read_split(d, "test")
    labels = sorted({r["label"] for r in train})
    label2id = {lab: i for i, lab in enumerate(labels)}
    model_name = default_model()
    tok = AutoTokenizer.from_pretrained(model_name)
    padding = "max_length" if args.stock_padding == "max_length" else False

    def to_ds(rows):
        ds = datasets.Dataset.from_dict({"text": [r["text"] for r in rows],
                                         "label": [label2id.get(r["label"], 0) for r in rows]})
        return ds.map(lambda b: tok(b["text"], truncation=True, max_length=args.max_length,
                                    padding=padding), batched=True, remove_columns=["text"])

    train_ds, test_ds = to_ds(train), to_ds(test)
    set_seed(seed)  # as run_glue.py: before the model, so the new head is seeded
    model = AutoModelForSequenceClassification.from_pretrained(
        model_name, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=label2id)
    targs = stock_training_args(out, seed, args.batch_size, args.eval_batch_size, args.stock_lr,
                                args.epochs)
    trainer = Trainer(model=model, args=targs, train_dataset=train_ds,
                      data_collator=DataCollatorWithPadding(tok))
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    pred = np.argmax(trainer.predict(test_ds).predictions, axis=1)
    predict_seconds = time.perf_counter() - start
    scores = label_scores([r["label"] for r in test], [labels[p] for p in pred], labels)
    return {"test": scores, "train_seconds": train_seconds,
            "train_texts_per_second": len(train) * args.epochs / train_seconds,
            "predict_seconds": predict_seconds}


def bertkit_settings(args, stock: bool = False) -> dict:
    """bertkit's learning rate, warm-up, weight decay and class weights: the recipe's, or with
    ``stock`` (the isolating side) the stock Trainer's."""
    if stock:
        return {"lr": args.stock_lr, "warmup": 0.0, "weight_decay": 0.0, "class_weights": "none"}
    if args.bertkit_recipe:
        from bertkit.workflows.recipes import load
        settings = load(args.bertkit_recipe).stages[0].settings
        return {"lr": float(settings["lr"]), "warmup": float(settings.get("warmup", 0.0)),
                "weight_decay": float(settings.get("weight_decay", 0.0)),
                "class_weights": settings.get("class_weights", "none")}
    return {"lr": args.lr, "warmup": 0.0, "weight_decay": 0.0,
            "class_weights": args.class_weights}


def bertkit_run(d: Path, args, seed: int, out: str, stock_settings: bool = False) -> dict:
    cfg = CLSConfig(data=str(d), epochs=args.epochs, batch_size=args.batch_size,
                    seed=seed, output_dir=out, max_length=args.max_length, max_grad_norm=1.0,
                    logging_steps=10**9, eval_batch_size=args.eval_batch_size,
                    length_group=args.length_group, **bertkit_settings(args, stock_settings))
    r = finetune_cls(cfg, console=None)
    # training time from the per-epoch train records of metrics.jsonl (evaluation excluded)
    records = [json.loads(x) for x in (Path(out) / "metrics.jsonl").read_text().splitlines()
               if x.strip()]
    n = len(read_split(d, "train"))
    epoch_seconds = [n / rec["examples_per_s"] for rec in records if rec.get("type") == "train"
                     and rec.get("examples_per_s")]
    r["loop_train_seconds"] = r["train_seconds"]
    if epoch_seconds:
        r["train_seconds"] = sum(epoch_seconds)
    r["train_texts_per_second"] = n * args.epochs / r["train_seconds"]
    return r


def row(name: str, seed: int, r: dict) -> str:
    t = r["test"]
    return (f"seed {seed} {name:<22} test macro-F1 {100 * t['macro_f1']:6.2f}  accuracy "
            f"{100 * t['accuracy']:6.2f}  train {r['train_seconds']:7.1f} s "
            f"{r['train_texts_per_second']:7.2f} texts/s  predict {r['predict_seconds']:6.1f} s  "
            f"load {r['load_before']}->{r['load_after']}")


def report(results: dict, seeds: list[int], log) -> tuple[float, float]:
    """Print the per-side medians and the bertkit/stock gain and throughput ratio; return both."""
    log(f"\nover seeds {seeds} (test macro-F1 in points, throughput in texts/s):")
    med = {}
    for side, runs in results.items():
        f1 = [100 * runs[s]["test"]["macro_f1"] for s in seeds]
        tp = [runs[s]["train_texts_per_second"] for s in seeds]
        med[side] = (statistics.median(f1), statistics.median(tp))
        log(f"{side:<22} macro-F1 {spread(f1)}  throughput {spread(tp)}")
    gain = med["bertkit"][0] - med["stock"][0]
    ratio = med["bertkit"][1] / med["stock"][1]
    for side in [s for s in results if s != "stock"]:
        f1 = {name: [results[name][s]["test"]["macro_f1"] for s in seeds] for name in (side, "stock")}
        diff = [100 * (a - b) for a, b in zip(f1[side], f1["stock"])]
        per = [results[side][s]["train_texts_per_second"]
               / results["stock"][s]["train_texts_per_second"] for s in seeds]
        log(f"{side:<22} per seed vs stock: macro-F1 {spread(diff)} points; training throughput "
            f"ratio {spread(per)}")
    log(f"bertkit/stock, ratio of the medians: macro-F1 {gain:+.2f} points (goal >= 0: "
        f"{'met' if gain >= 0 else 'MISSED'}), training throughput {ratio:.2f}x "
        f"(goal >= 1.5x: {'met' if ratio >= 1.5 else 'MISSED'})")
    return gain, ratio


def rerender(path: Path, log) -> None:
    """Print the rows and summary of a run from its ``--json`` file (when its printout is lost)."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    log(f"re-rendered from {path} (figures as the run saved them); run arguments: "
        f"{saved['args']}")
    seeds = [int(s) for s in saved["args"]["seeds"].split(",")]
    results = {side: {int(s): r for s, r in runs.items()} for side, runs in saved["runs"].items()}
    for k, seed in enumerate(seeds):
        for side in side_order(tuple(results), k):
            log(row(side, seed, results[side][seed]))
    report(results, seeds, log)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="scicite", help="name under $BERTKIT_DATA/cls/ or a directory")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-4,
                    help="bertkit's learning rate when no --bertkit-recipe is given")
    ap.add_argument("--stock-lr", type=float, default=5e-5,
                    help="the stock side's learning rate (the Trainer's default 5e-5)")
    ap.add_argument("--bertkit-recipe", default=None,
                    help="take bertkit's lr, warm-up, weight decay, class weights from this recipe")
    ap.add_argument("--isolate", action="store_true",
                    help="add bertkit with the stock settings as a third side")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--eval-batch-size", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--max-train", type=int, default=None)
    ap.add_argument("--max-dev", type=int, default=None)
    ap.add_argument("--max-test", type=int, default=None)
    ap.add_argument("--class-weights", default="none", help="bertkit's --class-weights")
    ap.add_argument("--length-group", type=int, default=CLSConfig.length_group,
                    help="bertkit's --length-group (1: random batches)")
    ap.add_argument("--stock-padding", choices=("max_length", "dynamic"), default="max_length",
                    help="max_length: run_glue.py's default (pad_to_max_length); dynamic: "
                         "DataCollatorWithPadding")
    ap.add_argument("--json", type=Path, default=None, help="also write all figures here")
    ap.add_argument("--name", default=None,
                    help="log name (<log-dir>/<name>.log; default cls_vs_stock_<data>)")
    ap.add_argument("--log-dir", type=Path, default=RESULTS)
    ap.add_argument("--from-json", type=Path, default=None,
                    help="only print (and log) the tables of an earlier run's --json file")
    args = ap.parse_args()
    log = logger(args.log_dir / f"{args.name or 'cls_vs_stock_' + Path(args.data).name}.log")

    if args.from_json:
        rerender(args.from_json, log)
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        torch.set_num_threads(args.threads)
    src = Path(args.data)
    if not src.is_dir():
        root = data_root()
        if root is None or not (root / "cls" / args.data).is_dir():
            sys.exit(f"error: no data set '{args.data}': set BERTKIT_DATA to a folder holding "
                     f"cls/{args.data}/")
        src = root / "cls" / args.data
    seeds = [int(s) for s in args.seeds.split(",")]
    log(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; command: python benchmarks/cls_vs_stock.py "
        + " ".join(sys.argv[1:]))
    log(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
          f"cuda={torch.cuda.is_available()}; data {src}; epochs {args.epochs}, stock lr "
          f"{args.stock_lr}, bertkit {bertkit_settings(args)} (recipe {args.bertkit_recipe}), "
          f"batch {args.batch_size}, eval batch {args.eval_batch_size}, max length "
          f"{args.max_length}, seeds {seeds}; stock padding {args.stock_padding}; bertkit length "
          f"group {args.length_group}; train/dev/test first "
          f"{args.max_train}/{args.max_dev}/{args.max_test} (None = all); load {load1()}")
    sides = ("stock", "bertkit") + (("bertkit-stock-settings",) if args.isolate else ())
    results: dict[str, dict[int, dict]] = {side: {} for side in sides}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        d = subset_dir(src, Path(tmp) / "data", {"train": args.max_train, "dev": args.max_dev,
                                                 "test": args.max_test})
        for k, seed in enumerate(seeds):
            for side in side_order(sides, k):
                before = load1()
                out = f"{tmp}/{side}-{seed}"
                r = stock_recipe(d, args, seed, out) if side == "stock" else \
                    bertkit_run(d, args, seed, out, stock_settings=side != "bertkit")
                r.update(load_before=before, load_after=load1())
                results[side][seed] = r
                log(row(side, seed, r))
    gain, ratio = report(results, seeds, log)
    log(f"total wall time {time.perf_counter() - start:.0f} s; load {load1()}; log {log.path}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        slim = {side: {str(s): {**r, "test": {m: x for m, x in r["test"].items()
                                              if m not in ("per_label", "confusion", "baseline")}}
                       for s, r in runs.items()} for side, runs in results.items()}
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "runs": slim, "median_macro_f1_gain": gain,
                                         "median_throughput_ratio": ratio}, indent=2,
                                        default=str) + "\n")


if __name__ == "__main__":
    main()
