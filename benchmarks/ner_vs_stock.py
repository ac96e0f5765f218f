"""bertkit vs the stock Hugging Face NER recipe on BC5CDR, in one run, on the same machine.

Stock recipe (as ``examples/pytorch/token-classification/run_ner.py``): AutoModelForTokenClassification,
first-subword labels, DataCollatorForTokenClassification, Trainer (random batches, padding to the
batch's longest), prediction with ``Trainer.predict`` (its default eval batch of 8), seqeval.
bertkit: ``finetune_ner`` with the same model, epochs, learning rate, batch size and seed, and the
Trainer's defaults for the rest (no warm-up, no weight decay, gradient clipping at 1.0); by default
random batches as the stock recipe, run on packed rows (``--no-pack``: length-grouped batches).
Then bertkit's own default recipe (``recipes/finetune/bc5cdr-ner-minilm.yaml``, chosen on dev only).

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/ner_vs_stock.py [--epochs 2 --lr 5e-5 --batch-size 32]
        [--skip-recipe] [--skip-stock] [--skip-same] [--no-pack] [--length-group G]
        [--max-train N] [--json OUT]

Prints test entity F1 (seqeval default mode, which the stock recipe reports, and strict IOB2),
training sentences/s, prediction seconds, and bertkit/stock ratios.
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

from bertkit.config import build_config  # noqa: E402
from bertkit.recipes import load_recipe  # noqa: E402
from bertkit.encoders import default_model, quiet_transformers  # noqa: E402
from bertkit.metrics.ner import entity_scores  # noqa: E402
from bertkit.tasks.ner import NERConfig, finetune_ner  # noqa: E402
from bertkit.tasks.ner.data import load_ner_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def stock_dataset(sentences, tok, label2id: dict[str, int]):
    """The stock recipe's tokenised ``datasets.Dataset``: first-subword labels, -100 elsewhere
    (a tag unseen in training is labelled ``O``), as ``run_ner.py`` builds it."""
    import datasets

    def tokenize(batch):
        enc = tok(batch["tokens"], is_split_into_words=True, truncation=True)
        all_labels = []
        for i, tags in enumerate(batch["tags"]):
            prev, row = None, []
            for w in enc.word_ids(i):
                row.append(-100 if w is None or w == prev else label2id.get(tags[w], label2id["O"]))
                prev = w
            all_labels.append(row)
        enc["labels"] = all_labels
        return enc

    ds = datasets.Dataset.from_dict({"tokens": [s.tokens for s in sentences],
                                     "tags": [s.tags for s in sentences]})
    return ds.map(tokenize, batched=True, remove_columns=["tokens", "tags"])


def stock_recipe(data, epochs: int, lr: float, batch_size: int, seed: int, max_train: int | None,
                 out: str) -> dict:
    """The stock Trainer recipe; returns test scores and timings."""
    from transformers import (AutoModelForTokenClassification, AutoTokenizer,
                              DataCollatorForTokenClassification, Trainer, TrainingArguments,
                              set_seed)
    import datasets

    quiet_transformers()
    datasets.disable_progress_bars()
    train_s = data.splits["train"][:max_train] if max_train else data.splits["train"]
    test_s = data.splits["test"]
    labels = sorted({t for s in train_s for t in s.tags})
    label2id = {l: i for i, l in enumerate(labels)}
    model_name = default_model()
    tok = AutoTokenizer.from_pretrained(model_name)

    train_ds = stock_dataset(train_s, tok, label2id)
    test_ds = stock_dataset(test_s, tok, label2id)
    set_seed(seed)  # as run_ner.py: before the model, so the new head's initialisation is seeded
    model = AutoModelForTokenClassification.from_pretrained(
        model_name, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=label2id)
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=batch_size,
                             learning_rate=lr, num_train_epochs=epochs, seed=seed, report_to=[],
                             save_strategy="no", eval_strategy="no", logging_steps=50,
                             disable_tqdm=True, use_cpu=not torch.cuda.is_available())
    trainer = Trainer(model=model, args=args, train_dataset=train_ds,
                      data_collator=DataCollatorForTokenClassification(tok))
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    out_pred = trainer.predict(test_ds)
    pred_ids = np.argmax(out_pred.predictions, axis=2)
    preds = []
    for i, s in enumerate(test_s):
        row = [labels[p] for p, l in zip(pred_ids[i], out_pred.label_ids[i]) if l != -100]
        preds.append(row + ["O"] * (len(s.tokens) - len(row)))  # truncated words: O
    predict_seconds = time.perf_counter() - start
    scores = entity_scores([s.tags for s in test_s], preds)
    return {"test": scores, "train_seconds": train_seconds,
            "train_sentences_per_second": len(train_s) * epochs / train_seconds,
            "predict_seconds": predict_seconds}


def bertkit_run(cfg: NERConfig) -> dict:
    return finetune_ner(cfg, console=None)


def row(name: str, r: dict) -> str:
    t = r["test"]
    return (f"{name:<22} F1 {100 * t['conlleval_f1']:6.2f} (strict {100 * t['f1']:6.2f})  "
            f"train {r['train_seconds']:7.1f} s  {r['train_sentences_per_second']:6.1f} sent/s  "
            f"predict {r['predict_seconds']:6.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="bc5cdr")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--max-train", type=int, default=None, help="first N training sentences only")
    ap.add_argument("--length-group", type=int, default=None,
                    help="bertkit batches sorted by length together (1: random batches)")
    ap.add_argument("--no-pack", action="store_true",
                    help="bertkit without packing (length-grouped batches unless --length-group)")
    ap.add_argument("--skip-stock", action="store_true")
    ap.add_argument("--skip-recipe", action="store_true")
    ap.add_argument("--skip-same", action="store_true",
                    help="skip bertkit at the stock settings (e.g. to time the recipe alone)")
    ap.add_argument("--json", type=Path, default=None, help="also write all figures here")
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    data = load_ner_data(args.data)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"cuda={torch.cuda.is_available()}; data {args.data}; epochs {args.epochs}, lr {args.lr}, "
          f"batch {args.batch_size}, seed {args.seed}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_stock:
            results["stock"] = stock_recipe(data, args.epochs, args.lr, args.batch_size, args.seed,
                                            args.max_train, f"{tmp}/stock")
            print(row("stock HF recipe", results["stock"]), flush=True)
        # the stock Trainer's defaults too: no warm-up, no weight decay, clipping at 1.0
        same = NERConfig(data=args.data, epochs=args.epochs, lr=args.lr, batch_size=args.batch_size,
                         seed=args.seed, output_dir=f"{tmp}/bertkit", max_train_samples=args.max_train,
                         warmup=0.0, weight_decay=0.0, max_grad_norm=1.0, logging_steps=10**9,
                         pack=not args.no_pack,
                         **({"length_group": args.length_group} if args.length_group else {}))
        if not args.skip_same:
            results["bertkit"] = bertkit_run(same)
            print(row("bertkit, same settings", results["bertkit"]), flush=True)
        if not args.skip_recipe:
            recipe = load_recipe(ROOT / "recipes" / "finetune" / "bc5cdr-ner-minilm.yaml")
            cfg = build_config(NERConfig, recipe, {"output_dir": f"{tmp}/recipe", "data": args.data,
                                                   "max_train_samples": args.max_train,
                                                   "logging_steps": 10**9})
            results["recipe"] = bertkit_run(cfg)
            print(row("bertkit default recipe", results["recipe"]), flush=True)
    if "stock" in results and "bertkit" in results:
        s, b = results["stock"], results["bertkit"]
        print(f"ratios bertkit/stock (same settings): training throughput "
              f"{b['train_sentences_per_second'] / s['train_sentences_per_second']:.2f}x, "
              f"prediction speed {s['predict_seconds'] / b['predict_seconds']:.2f}x, "
              f"test F1 (default mode) {100 * (b['test']['conlleval_f1'] - s['test']['conlleval_f1']):+.2f} points")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        slim = {k: {**v, "test": {m: x for m, x in v["test"].items() if m != "per_type"}}
                for k, v in results.items()}
        args.json.write_text(json.dumps(slim, indent=2) + "\n")


if __name__ == "__main__":
    main()
