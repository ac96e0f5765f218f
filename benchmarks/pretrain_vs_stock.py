"""Pretraining throughput: bertkit (packed, logits at masked positions) vs the stock recipe.

The stock recipe is ``run_mlm.py --line_by_line`` in effect: one sentence a line, tokenised and
truncated to 128, batches padded to their longest line by ``DataCollatorForLanguageModeling``
(token masking, 15%), ``BertForMaskedLM`` computing the vocabulary projection at every position,
trained by ``Trainer``. bertkit packs the corpus into full 128-token sequences (no padding) and
projects only the masked positions. Same model (the packaged MiniLM encoder with a new MLM
head), batch size, learning rate, precision (fp32), threads and number of steps.

The figure is real (non-padding) tokens per second of training: the tokens in the batches
trained on, over the training time (both include every step; data preparation and the one-off
tokenisation are excluded). bertkit is run with token masking (like for like) and with span
masking + SBO.

    python benchmarks/pretrain_vs_stock.py --steps 20 --json benchmarks/results/pretrain_vs_stock.json
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model, load_tokenizer, quiet_transformers  # noqa: E402


def stock(args, lines: list[str]) -> dict:
    from datasets import Dataset
    from transformers import (AutoModelForMaskedLM, DataCollatorForLanguageModeling, Trainer,
                              TrainingArguments)

    tok = load_tokenizer(default_model())
    ds = Dataset.from_dict({"text": lines}).map(
        lambda b: tok(b["text"], truncation=True, max_length=args.length,
                      return_special_tokens_mask=True),
        batched=True, remove_columns=["text"])
    base = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=args.seed)
    seen = {"tokens": 0, "batches": 0, "padded": 0}

    def collate(examples):
        batch = base(examples)
        if seen["batches"] < args.steps:
            seen["tokens"] += int(batch["attention_mask"].sum())
            seen["padded"] += int(batch["attention_mask"].numel())
        seen["batches"] += 1
        return batch

    torch.manual_seed(args.seed)
    model = AutoModelForMaskedLM.from_pretrained(default_model())
    with tempfile.TemporaryDirectory() as out:
        targs = TrainingArguments(output_dir=out, per_device_train_batch_size=args.batch_size,
                                  max_steps=args.steps, learning_rate=args.lr, warmup_steps=0,
                                  logging_steps=max(args.steps // 4, 1), save_strategy="no",
                                  report_to="none", use_cpu=True, seed=args.seed,
                                  dataloader_num_workers=0, disable_tqdm=True)
        trainer = Trainer(model=model, args=targs, train_dataset=ds, data_collator=collate)
        start = time.perf_counter()
        out_metrics = trainer.train().metrics
        wall = time.perf_counter() - start
    seconds = out_metrics.get("train_runtime", wall)
    return {"steps": args.steps, "real_tokens": seen["tokens"], "padded_tokens": seen["padded"],
            "train_seconds": seconds, "real_tokens_per_s": seen["tokens"] / seconds,
            "final_loss": out_metrics.get("train_loss")}


def bertkit_run(args, masking: str, workdir: Path) -> dict:
    from bertkit.tasks.pretrain import PretrainConfig, pretrain

    cfg = PretrainConfig(corpus=args.corpus, model=default_model(), masking=masking,
                         max_steps=args.steps, batch_size=args.batch_size,
                         max_seq_length=args.length, lr=args.lr, warmup=0.0, precision="fp32",
                         device="cpu", seed=args.seed, logging_steps=max(args.steps // 4, 1),
                         output_dir=str(workdir / masking), overwrite=True,
                         cache_dir=args.cache_dir)
    res = pretrain(cfg)
    tokens = args.steps * args.batch_size * args.length
    return {"steps": res["steps"], "real_tokens": tokens, "padded_tokens": tokens,
            "train_seconds": res["train_seconds"], "real_tokens_per_s": tokens / res["train_seconds"],
            "final_loss": res["train"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data = Path(os.environ.get("BERTKIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--corpus", default=str(data / "corpus" / "train.txt"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--skip-span", action="store_true", help="Only bertkit token vs stock.")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    quiet_transformers()
    lines = []
    with open(args.corpus, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                lines.append(line.rstrip("\n"))
            if len(lines) >= args.steps * args.batch_size * 2:
                break
    print(f"{torch.get_num_threads()} torch threads; batch {args.batch_size} x {args.length}, "
          f"{args.steps} steps, MiniLM-L6-H384, fp32 CPU", flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["bertkit token"] = bertkit_run(args, "token", Path(tmp))
        print("bertkit token:", json.dumps(results["bertkit token"]), flush=True)
        results["stock run_mlm line-by-line"] = stock(args, lines)
        print("stock:", json.dumps(results["stock run_mlm line-by-line"]), flush=True)
        if not args.skip_span:
            results["bertkit span+SBO"] = bertkit_run(args, "span", Path(tmp))
            print("bertkit span+SBO:", json.dumps(results["bertkit span+SBO"]), flush=True)
    ref = results["stock run_mlm line-by-line"]["real_tokens_per_s"]
    print("\nreal tokens/s (ratio to stock):")
    for name, r in results.items():
        print(f"  {name:<28} {r['real_tokens_per_s']:>9.1f}  ({r['real_tokens_per_s'] / ref:.2f}x)")
    stock_r = results["stock run_mlm line-by-line"]
    print(f"stock batches were {100 * stock_r['real_tokens'] / stock_r['padded_tokens']:.1f}% real tokens")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "threads": torch.get_num_threads(),
                                               "args": vars(args)}, indent=2) + "\n")


if __name__ == "__main__":
    main()
