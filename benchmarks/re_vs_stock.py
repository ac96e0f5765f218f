"""bertkit vs the stock Hugging Face recipe for relation classification on ChemProt, in one run.

Stock recipe (as ``examples/pytorch/text-classification/run_glue.py`` on SciBERT's marked text):
AutoModelForSequenceClassification ([CLS] -> pooler -> linear) on the raw text with its
``<< >>``/``[[ ]]`` markers tokenised as ordinary pieces, truncation at 512, DataCollatorWithPadding,
Trainer (random batches padded to the batch's longest), ``Trainer.predict``.
bertkit: ``finetune_re`` (markers as added special tokens, ``--pooling`` [bertkit's default
unless given], length-grouped batches) with the same model, epochs, learning rate, batch size and seed, and the Trainer's
defaults for the rest (no warm-up, no weight decay, clipping at 1.0).

Both train on the same first ``--max-train`` training pairs and are scored on the same first
``--max-test`` test pairs (all by default); bertkit picks its best epoch on the first ``--max-dev``
dev pairs (the stock recipe keeps its last epoch). The subsets are written to a temporary folder,
never into the repository.

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/re_vs_stock.py [--epochs 2 --lr 2e-4
        --batch-size 16 --max-train 500 --max-dev 150 --max-test 500] [--pooling cls|entity-start]
        [--skip-stock] [--pooling-sweep] [--json OUT]

``--pooling-sweep`` instead trains bertkit with each pooling (cls, entity-start) and prints dev
micro-F1 (the figures behind the default pooling).

Prints test micro-F1 (ChemProt has no negative label: micro-F1 = accuracy), macro-F1, training
pairs/s, prediction seconds, and the bertkit/stock ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model, quiet_transformers  # noqa: E402
from bertkit.metrics.re import relation_scores  # noqa: E402
from bertkit.tasks.re import REConfig, finetune_re  # noqa: E402
from bertkit.tasks.re.data import LAYOUT  # noqa: E402
from bertkit.data.sets import data_root  # noqa: E402


def subset_dir(src: Path, out: Path, sizes: dict[str, int | None]) -> Path:
    """Copy the first N lines of each split of ``src`` into ``out`` (a temporary folder)."""
    out.mkdir(parents=True, exist_ok=True)
    for split, n in sizes.items():
        lines = [l for l in (src / f"{split}.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]
        (out / f"{split}.jsonl").write_text("\n".join(lines[:n] if n else lines) + "\n", encoding="utf-8")
    return out


def read_split(d: Path, split: str) -> list[dict]:
    return [json.loads(l) for l in (d / f"{split}.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]


def stock_recipe(d: Path, epochs: int, lr: float, batch_size: int, seed: int, out: str) -> dict:
    """The stock Trainer recipe on the raw marked text; returns test scores and timings."""
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                              DataCollatorWithPadding, Trainer, TrainingArguments, set_seed)
    import datasets

    quiet_transformers()
    datasets.disable_progress_bars()
    train, test = read_split(d, "train"), read_split(d, "test")
    labels = sorted({r["label"] for r in train})
    label2id = {l: i for i, l in enumerate(labels)}
    model_name = default_model()
    tok = AutoTokenizer.from_pretrained(model_name)

    def to_ds(rows):
        ds = datasets.Dataset.from_dict({"text": [r["text"] for r in rows],
                                         "label": [label2id.get(r["label"], 0) for r in rows]})
        return ds.map(lambda b: tok(b["text"], truncation=True), batched=True, remove_columns=["text"])

    train_ds, test_ds = to_ds(train), to_ds(test)
    set_seed(seed)  # as the stock run_glue.py: before the model, so the new head is seeded
    model = AutoModelForSequenceClassification.from_pretrained(
        model_name, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=label2id)
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=batch_size,
                             learning_rate=lr, num_train_epochs=epochs, seed=seed, report_to=[],
                             save_strategy="no", eval_strategy="no", logging_steps=50,
                             disable_tqdm=True, use_cpu=not torch.cuda.is_available())
    trainer = Trainer(model=model, args=args, train_dataset=train_ds,
                      data_collator=DataCollatorWithPadding(tok))
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    pred = np.argmax(trainer.predict(test_ds).predictions, axis=1)
    predict_seconds = time.perf_counter() - start
    scores = relation_scores([r["label"] for r in test], [labels[p] for p in pred], None, labels)
    return {"test": scores, "train_seconds": train_seconds,
            "train_pairs_per_second": len(train) * epochs / train_seconds,
            "predict_seconds": predict_seconds}


def bertkit_run(d: Path, args, out: str, pooling: str) -> dict:
    cfg = REConfig(data=str(d), epochs=args.epochs, lr=args.lr, batch_size=args.batch_size,
                   seed=args.seed, output_dir=out, pooling=pooling, warmup=0.0, weight_decay=0.0,
                   max_grad_norm=1.0, logging_steps=10**9)
    r = finetune_re(cfg, console=None)
    # training time from the per-epoch train records of metrics.jsonl (each covers one epoch's
    # steps only, evaluation excluded), independent of the loop's own train_seconds
    records = [json.loads(l) for l in (Path(out) / "metrics.jsonl").read_text().splitlines() if l.strip()]
    n = sum(1 for _ in (d / "train.jsonl").open() if _.strip())
    epoch_seconds = [n / rec["examples_per_s"] for rec in records if rec.get("type") == "train"]
    r["loop_train_seconds"] = r["train_seconds"]
    r["train_seconds"] = sum(epoch_seconds)
    r["train_pairs_per_second"] = n * args.epochs / r["train_seconds"]
    return r


def row(name: str, r: dict) -> str:
    t = r["test"]
    return (f"{name:<24} test micro-F1 {100 * t['micro_f1']:6.2f}  macro-F1 {100 * t['macro_f1']:6.2f}  "
            f"train {r['train_seconds']:7.1f} s  {r['train_pairs_per_second']:6.2f} pairs/s  "
            f"predict {r['predict_seconds']:6.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="chemprot", help="name under $BERTKIT_DATA/re/ or a directory")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--max-train", type=int, default=None, help="first N training pairs only")
    ap.add_argument("--max-dev", type=int, default=None, help="first N dev pairs only")
    ap.add_argument("--max-test", type=int, default=None, help="first N test pairs only")
    ap.add_argument("--pooling-sweep", action="store_true", help="compare bertkit's poolings on dev")
    ap.add_argument("--pooling", default=REConfig.pooling, help="bertkit's pooling (default: bertkit's)")
    ap.add_argument("--skip-stock", action="store_true", help="bertkit only (no ratios)")
    ap.add_argument("--json", type=Path, default=None, help="also write all figures here")
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    src = Path(args.data)
    if not src.is_dir():
        root = data_root()
        if root is None or not (root / "re" / args.data).is_dir():
            sys.exit(f"error: no data set '{args.data}': set BERTKIT_DATA to a folder holding {LAYOUT}")
        src = root / "re" / args.data
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"cuda={torch.cuda.is_available()}; data {src}; epochs {args.epochs}, lr {args.lr}, "
          f"batch {args.batch_size}, seed {args.seed}; train/dev/test first "
          f"{args.max_train}/{args.max_dev}/{args.max_test} pairs (None = all)", flush=True)
    results = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        d = subset_dir(src, Path(tmp) / "data", {"train": args.max_train, "dev": args.max_dev,
                                                 "test": args.max_test})
        if args.pooling_sweep:
            for pooling in ("cls", "entity-start"):
                r = bertkit_run(d, args, f"{tmp}/{pooling}", pooling)
                results[pooling] = r
                print(f"pooling {pooling:<13} dev micro-F1 {100 * r['dev']['micro_f1']:6.2f}  "
                      f"dev macro-F1 {100 * r['dev']['macro_f1']:6.2f}  (best epoch {r['best_epoch']}; "
                      f"test micro-F1 {100 * r['test']['micro_f1']:6.2f})", flush=True)
        else:
            if not args.skip_stock:
                results["stock"] = stock_recipe(d, args.epochs, args.lr, args.batch_size,
                                                args.seed, f"{tmp}/stock")
                print(row("stock HF recipe", results["stock"]), flush=True)
            results["bertkit"] = bertkit_run(d, args, f"{tmp}/bertkit", args.pooling)
            print(row(f"bertkit ({args.pooling}), same", results["bertkit"]), flush=True)
            if not args.skip_stock:
                s, b = results["stock"], results["bertkit"]
                gain = 100 * (b["test"]["micro_f1"] - s["test"]["micro_f1"])
                ratio = b["train_pairs_per_second"] / s["train_pairs_per_second"]
                print(f"ratios bertkit/stock (same settings): training throughput {ratio:.2f}x "
                      f"(target >= 1.5x: {'met' if ratio >= 1.5 else 'MISSED'}), prediction speed "
                      f"{s['predict_seconds'] / b['predict_seconds']:.2f}x, test micro-F1 "
                      f"{gain:+.2f} points (target >= +2: {'met' if gain >= 2 else 'MISSED'})",
                      flush=True)
    print(f"total wall time {time.perf_counter() - start:.0f} s", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        slim = {k: {**v, "test": {m: x for m, x in v["test"].items()
                                  if m not in ("per_label", "confusion")}} for k, v in results.items()}
        args.json.write_text(json.dumps(slim, indent=2) + "\n")


if __name__ == "__main__":
    main()
