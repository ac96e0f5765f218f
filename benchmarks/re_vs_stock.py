"""bertkit vs the stock Hugging Face recipe for relation classification on ChemProt: interleaved,
several seeds, in one run (issue 16).

Sides (``--sides``, any subset; the ``-tuned`` ones only with their learning rate given):

  stock          ``examples/pytorch/text-classification/run_glue.py`` on the marked text:
                 AutoModelForSequenceClassification ([CLS] -> pooler -> linear), the raw text
                 with its ``<< >>``/``[[ ]]`` markers tokenised as ordinary pieces, truncation at
                 512, DataCollatorWithPadding, Trainer with random batches, the last epoch kept,
                 ``Trainer.predict``; ``set_seed`` before the model (its new head is seeded); the
                 Trainer's defaults for the rest: lr ``--stock-lr`` (5e-5), no warm-up, no weight
                 decay, linear decay, clipping at 1.0.
  stock-grouped  the same with length-grouped batches (``group_by_length``, in transformers 5
                 ``train_sampling_strategy="group_by_length"``), as bertkit batches.
  bertkit        ``finetune_re`` with bertkit's own RE recipe for the packaged MiniLM, the
                 adaptation benchmark's (``benchmarks/adaptation.py``): lr ``--bertkit-lr`` (2e-4),
                 3 epochs, [CLS] pooling (``--pooling``), markers as added special tokens, 10%
                 linear warm-up, weight decay 0.01, clipping at 1.0, the best dev epoch (micro-F1)
                 kept. (``recipes/finetune/chemprot-re.yaml`` is SciBERT's setup for SciBERT, lr
                 2e-5, not used here.) bertkit always trains on length-grouped, shuffled batches
                 (``tasks.re.encoding.PairBatches``); it has no random-batch switch, so compare it
                 with stock-grouped for batching alike.
  stock-tuned    stock at its own dev-tuned learning rate ``--stock-tuned-lr``.
  stock-grouped-tuned  stock-grouped at ``--stock-tuned-lr`` (the sweep can tune it on
                 stock-grouped, which trains 2.4x faster than random batches and scored the
                 same at 5e-5: ``results/re_vs_stock/re_vs_stock_interleaved.log``).
  bertkit-tuned  bertkit at its own dev-tuned learning rate ``--bertkit-tuned-lr``.
                 Choose both on dev only with ``benchmarks/re_dev_sweep.py`` (test never printed).

Fairness: every side trains on the same first ``--max-train`` training pairs (all 4,169 by
default) with the same epochs, batch size (``--batch-size`` 32, bertkit's and SciBERT's; run_glue's
own default is 8), seeds and threads, and is scored on the same test pairs (all 3,469 by default).
Each run rebuilds its model from the packaged encoder. Seeds are interleaved and the sides
alternate (``_interleave.side_order``: seed 1 in the given order, seed 2 reversed, ...); the
1-minute load average is recorded before and after each run and a run on a shared machine is
marked. Figures per side are medians with min-max over seeds; a bertkit - stock difference is
taken per seed (same seed, same data) and summarised the same way; a throughput ratio is the
ratio of the medians. Training throughput: training pairs per second of training (bertkit's from
its per-epoch training records, dev evaluation excluded; the Trainer's ``train()`` wall time for
stock). ChemProt has no negative label: micro-F1 = accuracy.

The log goes to ``benchmarks/results/re_vs_stock/<--name>.log`` (an absolute ``--name`` path goes there);
a run below the full budget is labelled REDUCED.

Usage (full budget):
    BERTKIT_DATA=../shared/data python benchmarks/re_vs_stock.py --threads 1 \\
        --stock-tuned-lr LR --bertkit-tuned-lr LR --json benchmarks/results/re_vs_stock/re_vs_stock.json
The full budget takes hours (one stock run of 3 epochs is about 42 minutes of training on one
thread here, 17 with length-grouped batches, bertkit's about 18:
results/re_vs_stock/re_vs_stock_interleaved.log): run one seed per process (side by side on two cores, or in
several sessions), each with its own ``--json``, then print the summary over all of them:
    ... re_vs_stock.py --threads 1 --seeds 1 --name re_vs_stock_seed1 \
        --json benchmarks/results/re_vs_stock/re_vs_stock_seed1.json      # likewise seeds 2 and 3
    ... re_vs_stock.py --merge benchmarks/results/re_vs_stock/re_vs_stock_seed{1,2,3}.json
Each seed's sides still alternate within its own run; the merge refuses files run with other
settings or repeating a seed of a side, and leaves out (saying so) a side that lacks a seed. The
``--json`` file is rewritten after every run, so a run cut off part-way keeps what it finished.
Smoke:
    ... re_vs_stock.py --max-train 60 --max-dev 30 --max-test 30 --epochs 1 --seeds 1,2 \\
        --threads 1 --name /tmp/re_vs_stock_smoke
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

from _stock import stock_training_args  # noqa: E402
from _interleave import (load1, logger, merge_runs, read_split, shared_note, side_order,  # noqa: E402
                         spread, subset_dir)
from bertkit.data.sets import data_root  # noqa: E402
from bertkit.encoders import default_model, quiet_transformers  # noqa: E402
from bertkit.metrics.re import relation_scores  # noqa: E402
from bertkit.tasks.re import REConfig, finetune_re  # noqa: E402
from bertkit.tasks.re.data import LAYOUT  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "re_vs_stock"
SIDES = ("stock", "stock-grouped", "bertkit", "stock-tuned", "stock-grouped-tuned", "bertkit-tuned")
FULL = {"epochs": 3, "batch_size": 32, "max_train": None, "max_dev": None, "max_test": None}
BERTKIT_RECIPE = {"warmup": 0.1, "weight_decay": 0.01, "max_grad_norm": 1.0}  # + lr, epochs


def source_dir(name: str) -> Path:
    """``name`` as a directory, or the registered set under ``$BERTKIT_DATA/re/``."""
    src = Path(name)
    if src.is_dir():
        return src
    root = data_root()
    if root is None or not (root / "re" / name).is_dir():
        sys.exit(f"error: no data set '{name}': set BERTKIT_DATA to a folder holding {LAYOUT}")
    return root / "re" / name


def stock_run(d: Path, args, seed: int, lr: float, grouped: bool, out: str,
              split: str = "test") -> dict:
    """The stock Trainer recipe (random or length-grouped batches); scores on ``split``."""
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                              DataCollatorWithPadding, PrinterCallback, Trainer, set_seed)
    import datasets

    quiet_transformers()
    datasets.disable_progress_bars()
    train, scored = read_split(d, "train"), read_split(d, split)
    labels = sorted({r["label"] for r in train})  # run_glue: the training labels
    label2id = {x: i for i, x in enumerate(labels)}
    model_name = default_model()
    tok = AutoTokenizer.from_pretrained(model_name)

    def to_ds(rows):  # a label unseen in training gets -100: no loss, scored as a miss
        ds = datasets.Dataset.from_dict({"text": [r["text"] for r in rows],
                                         "label": [label2id.get(r["label"], -100) for r in rows]})
        return ds.map(lambda b: tok(b["text"], truncation=True), batched=True,
                      remove_columns=["text"])

    train_ds, scored_ds = to_ds(train), to_ds(scored)
    set_seed(seed)  # as run_glue.py: before the model, so the new head is seeded
    model = AutoModelForSequenceClassification.from_pretrained(
        model_name, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=label2id)
    targs = stock_training_args(
        out, seed, args.batch_size, args.eval_batch_size, lr, args.epochs,
        train_sampling_strategy="group_by_length" if grouped else "random")
    trainer = Trainer(model=model, args=targs, train_dataset=train_ds,
                      data_collator=DataCollatorWithPadding(tok))
    trainer.remove_callback(PrinterCallback)  # its end-of-training dict would clutter the log
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    # with group_by_length the Trainer also length-groups (reorders) the predicted pairs, so gold
    # comes from the returned label_ids, which follow the same order
    res = trainer.predict(scored_ds)
    predict_seconds = time.perf_counter() - start
    pred = [labels[p] for p in np.argmax(res.predictions, axis=1)]
    assert sorted(res.label_ids.tolist()) == sorted(scored_ds["label"])
    gold = [labels[g] if g >= 0 else "(unseen in training)" for g in res.label_ids]
    return {split: relation_scores(gold, pred, None, labels), "train_seconds": train_seconds,
            "train_pairs_per_second": len(train) * args.epochs / train_seconds,
            "predict_seconds": predict_seconds}


def bertkit_run(d: Path, args, seed: int, lr: float, out: str, pooling: str | None = None) -> dict:
    """``finetune_re`` with bertkit's recipe at ``lr``: ``dev`` (best epoch), ``test``, timings."""
    cfg = REConfig(data=str(d), epochs=args.epochs, lr=lr, batch_size=args.batch_size, seed=seed,
                   output_dir=out, pooling=pooling or args.pooling, logging_steps=10**9,
                   eval_batch_size=args.eval_batch_size, **BERTKIT_RECIPE)
    r = finetune_re(cfg, console=None)
    # training time from the per-epoch train records of metrics.jsonl (each covers one epoch's
    # steps only, evaluation excluded), independent of the loop's own train_seconds
    records = [json.loads(x) for x in (Path(out) / "metrics.jsonl").read_text().splitlines()
               if x.strip()]
    n = len(read_split(d, "train"))
    epoch_seconds = [n / rec["examples_per_s"] for rec in records
                     if rec.get("type") == "train" and rec.get("examples_per_s")]
    r["loop_train_seconds"] = r["train_seconds"]
    if epoch_seconds:
        r["train_seconds"] = sum(epoch_seconds)
    r["train_pairs_per_second"] = n * args.epochs / r["train_seconds"]
    return r


def side_lr(side: str, args) -> float:
    return {"stock": args.stock_lr, "stock-grouped": args.stock_lr, "bertkit": args.bertkit_lr,
            "stock-tuned": args.stock_tuned_lr, "stock-grouped-tuned": args.stock_tuned_lr,
            "bertkit-tuned": args.bertkit_tuned_lr}[side]


def run_side(side: str, d: Path, args, seed: int, out: str) -> dict:
    lr = side_lr(side, args)
    if side.startswith("bertkit"):
        return bertkit_run(d, args, seed, lr, out)
    return stock_run(d, args, seed, lr, side.startswith("stock-grouped"), out)


def slim(scores: dict) -> dict:
    return {k: v for k, v in scores.items() if k not in ("per_label", "confusion")}


def summarise(results: dict[str, dict[int, dict]], seeds: list[int], label: str,
              log) -> tuple[dict, dict]:
    """Print the per-side medians, the bertkit - stock comparisons and the goals; return the
    comparisons and goals (as saved in the JSON)."""
    sides = tuple(results)

    def per_seed(side: str, key: str) -> list[float]:
        return [100 * results[side][s]["test"][key] if key.endswith("f1")
                else results[side][s][key] for s in seeds]

    log(f"\n{label}; over seeds {seeds}: test micro-F1, macro-F1 (points), training pairs/s")
    for side in sides:
        log(f"{side:<19} micro-F1 {spread(per_seed(side, 'micro_f1'))}  macro-F1 "
            f"{spread(per_seed(side, 'macro_f1'))}  pairs/s "
            f"{spread(per_seed(side, 'train_pairs_per_second'))}")
    comparisons = {}
    pairs = [(b, s) for b in ("bertkit", "bertkit-tuned")
             for s in ("stock", "stock-grouped", "stock-tuned", "stock-grouped-tuned")
             if b in sides and s in sides]
    if pairs:
        log("\nbertkit - stock, test micro-F1 per seed (points); throughput ratio of medians "
            "(goal: +2 micro-F1)")
    for b, s in pairs:
        diffs = [x - y for x, y in zip(per_seed(b, "micro_f1"), per_seed(s, "micro_f1"))]
        ratio = (statistics.median(per_seed(b, "train_pairs_per_second"))
                 / statistics.median(per_seed(s, "train_pairs_per_second")))
        met = statistics.median(diffs) >= 2
        comparisons[f"{b} - {s}"] = {"micro_f1_diffs": diffs, "throughput_ratio": ratio,
                                     "goal_met": met}
        note = (" (every seed)" if min(diffs) >= 2 else
                " (by the median; the per-seed spread includes 0)" if met and min(diffs) <= 0
                else f" (by the median only; per-seed minimum {min(diffs):+.2f})" if met else "")
        log(f"{b + ' - ' + s:<28} {spread(diffs)}  {'met' if met else 'MISSED'}{note}; "
            f"throughput {ratio:.2f}x")
    goals = {}
    if "bertkit" in sides:
        own = [c for k, c in comparisons.items() if k.startswith("bertkit - ")]
        if own:
            goals["plus2_over_stock"] = all(c["goal_met"] for c in own)
            log(f"goal: bertkit's recipe >= +2 micro-F1 over every stock row run (median per-seed "
                f"difference): {'met' if goals['plus2_over_stock'] else 'MISSED'}")
        m = statistics.median(per_seed("bertkit", "micro_f1"))
        goals["at_least_70"] = m >= 70
        log(f"goal: bertkit's recipe >= 70 test micro-F1: median {m:.2f} "
            f"{'met' if m >= 70 else 'MISSED'}")
    return comparisons, goals


MERGE_FREE = {"seeds", "sides", "json", "name", "merge", "threads"}  # may differ between merged runs
LR_ARGS = {"stock_lr", "bertkit_lr", "stock_tuned_lr", "bertkit_tuned_lr"}  # compared per side


def merge(paths: list[Path], name: str) -> None:
    """Print (and log) the summary over the seeds of several ``--json`` files of this script, run
    with the same settings (one seed per run, e.g. in different sessions or side by side)."""
    log = logger(RESULTS / f"{name}.log")
    results, seeds, saved = merge_runs(
        paths, MERGE_FREE | LR_ARGS, log,
        lambda args, side: f"lr {side_lr(side, argparse.Namespace(**args)):g}")
    for side, by_seed in results.items():
        for seed in seeds:
            r, t = by_seed[seed], by_seed[seed]["test"]
            log(f"seed {seed} {side:<14} test micro-F1 {100 * t['micro_f1']:6.2f}  macro-F1 "
                f"{100 * t['macro_f1']:6.2f}  train {r['train_seconds']:7.1f} s "
                f"{r['train_pairs_per_second']:6.2f} pairs/s  load {r['load_before']}->"
                f"{r['load_after']}")
    full = all(saved[0]["args"].get(k) == v for k, v in FULL.items()) and len(seeds) >= 3
    summarise(results, seeds, "full budget" if full else
              "REDUCED BUDGET (not the issue's measurement)", log)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="chemprot", help="under $BERTKIT_DATA/re/, or a folder")
    ap.add_argument("--sides", default=None, help=f"comma-separated subset of {','.join(SIDES)} "
                    "(default: all, the -tuned ones where their learning rate is given)")
    ap.add_argument("--stock-lr", type=float, default=5e-5, help="the Trainer's default")
    ap.add_argument("--bertkit-lr", type=float, default=2e-4, help="bertkit's RE recipe")
    ap.add_argument("--stock-tuned-lr", type=float, default=None, help="from re_dev_sweep.py")
    ap.add_argument("--bertkit-tuned-lr", type=float, default=None, help="from re_dev_sweep.py")
    ap.add_argument("--pooling", default=REConfig.pooling, help="bertkit's pooling")
    ap.add_argument("--epochs", type=int, default=FULL["epochs"])
    ap.add_argument("--batch-size", type=int, default=FULL["batch_size"])
    ap.add_argument("--eval-batch-size", type=int, default=64)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--max-train", type=int, default=None, help="first N training pairs only")
    ap.add_argument("--max-dev", type=int, default=None, help="first N dev pairs only")
    ap.add_argument("--max-test", type=int, default=None, help="first N test pairs only")
    ap.add_argument("--name", default="re_vs_stock",
                    help="log benchmarks/results/re_vs_stock/<name>.log (an absolute path goes there)")
    ap.add_argument("--json", type=Path, default=None, help="also write all figures here")
    ap.add_argument("--merge", type=Path, nargs="+", default=None,
                    help="only summarise the --json files of earlier runs with the same settings "
                         "(e.g. one seed each) over all their seeds")
    args = ap.parse_args()
    if args.merge:
        merge(args.merge, args.name)
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    if args.sides:
        sides = tuple(args.sides.split(","))
    else:
        sides = tuple(s for s in SIDES if side_lr(s, args) is not None)
    bad = [s for s in sides if s not in SIDES or side_lr(s, args) is None]
    if bad:
        sys.exit(f"error: --sides {','.join(bad)}: unknown, or a -tuned side without its "
                 f"--stock-tuned-lr/--bertkit-tuned-lr (choose it with re_dev_sweep.py)")
    seeds = [int(s) for s in args.seeds.split(",")]
    src = source_dir(args.data)
    reduced = any(getattr(args, k) != v for k, v in FULL.items()) or len(seeds) < 3
    label = "REDUCED BUDGET (not the issue's measurement)" if reduced else "full budget"
    log = logger(RESULTS / f"{args.name}.log")
    log(f"{label}; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; command: python "
        + " ".join(sys.argv))
    log(f"torch {torch.__version__}, {threads} threads, {os.cpu_count()} CPUs, cuda="
        f"{torch.cuda.is_available()}; data {src}; train/dev/test first {args.max_train}/"
        f"{args.max_dev}/{args.max_test} (None = all); epochs {args.epochs}, batch "
        f"{args.batch_size}, seeds {seeds}; load {load1()}")
    log("sides: " + "; ".join(f"{s} lr {side_lr(s, args):g}" for s in sides)
        + f". stock: run_glue-style Trainer, random batches (stock-grouped: length-grouped), "
          f"no warm-up/decay, last epoch. bertkit: finetune_re, {args.pooling} pooling, "
          f"length-grouped batches (always), warm-up 0.1, weight decay 0.01, best dev epoch.")
    results: dict[str, dict[int, dict]] = {side: {} for side in sides}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        d = subset_dir(src, Path(tmp) / "data", {"train": args.max_train, "dev": args.max_dev,
                                                 "test": args.max_test})
        for k, seed in enumerate(seeds):
            for side in side_order(sides, k):
                before = load1()
                r = run_side(side, d, args, seed, f"{tmp}/{side}-{seed}")
                r.update(load_before=before, load_after=load1())
                results[side][seed] = r
                t = r["test"]
                log(f"seed {seed} {side:<14} test micro-F1 {100 * t['micro_f1']:6.2f}  macro-F1 "
                    f"{100 * t['macro_f1']:6.2f}  train {r['train_seconds']:7.1f} s "
                    f"{r['train_pairs_per_second']:6.2f} pairs/s  predict "
                    f"{r['predict_seconds']:6.1f} s  "
                    f"{shared_note(before, r['load_after'], threads)}")
                save_json(args, label, results)  # after every run: a cut-off run keeps its seeds

    comparisons, goals = summarise(results, seeds, label, log)
    log(f"total wall time {time.perf_counter() - start:.0f} s; load {load1()}; log {log.path}")
    save_json(args, label, results, comparisons, goals)


def save_json(args, label: str, results: dict[str, dict[int, dict]],
              comparisons: dict | None = None, goals: dict | None = None) -> None:
    """Write ``--json`` (atomically): the runs finished so far; comparisons and goals at the end.
    ``--merge`` reads only the finished runs, so a partly finished file can be merged."""
    if not args.json:
        return
    args.json.parent.mkdir(parents=True, exist_ok=True)
    runs = {side: {str(s): {**r, **{k: slim(r[k]) for k in ("test", "dev") if k in r}}
                   for s, r in by_seed.items()} for side, by_seed in results.items() if by_seed}
    tmp = args.json.with_name(args.json.name + ".tmp")
    tmp.write_text(json.dumps({"label": label, "args": vars(args), "runs": runs,
                               "comparisons": comparisons, "goals": goals, "finished":
                               comparisons is not None}, indent=2, default=str) + "\n")
    tmp.replace(args.json)


if __name__ == "__main__":
    main()
