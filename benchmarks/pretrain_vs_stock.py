"""Pretraining throughput, measured fairly: bertkit vs the stock ``run_mlm.py`` recipe.

Rows (same text, model, batch size, optimiser, precision and threads):

- ``stock run_mlm default``: what ``run_mlm.py`` does without ``--line_by_line``: every line
  tokenised with its special tokens, the texts concatenated and cut into full blocks of 128
  (``group_texts``), masked by ``DataCollatorForLanguageModeling`` (15%, special tokens mask
  from the tokenizer), ``BertForMaskedLM`` projecting every position onto the vocabulary.
- ``stock run_mlm --line_by_line``: one line a sequence, truncated to 128, batches padded to
  their longest line by the collator.
- ``bertkit token`` / ``bertkit span+SBO``: packed 128-token sequences, the vocabulary
  projection only at masked positions, batches masked ahead by the prefetch thread
  (``bertkit pretrain``'s batch source and model).

Every side runs the same plain step: take the next batch (for stock the collator runs here, as
a ``Trainer`` with ``dataloader_num_workers=0`` does), forward, backward, clip at 1.0, AdamW.
The sides are interleaved step by step (a rotating order) after ``--warmup`` steps each; the
figures are medians over ``--steps`` steps with min-max: seconds per step, real (non-padding)
tokens per second, and the milliseconds spent getting the batch. The load average is recorded
before and after, as the machine may be shared.

    python benchmarks/pretrain_vs_stock.py --steps 20 --batch-size 8 --json benchmarks/results/pretrain_vs_stock/pretrain_vs_stock.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model, load_tokenizer, quiet_transformers  # noqa: E402


def load() -> dict:
    """The machine's load (``_interleave.load_average``)."""
    from _interleave import load_average

    return load_average()


def stock_examples(tok, lines: list[str], length: int, grouped: bool) -> list[dict]:
    """run_mlm.py's datasets: ``group_texts`` blocks (default) or one truncated line each."""
    if not grouped:
        enc = tok(lines, truncation=True, max_length=length, return_special_tokens_mask=True)
        return [{k: enc[k][i] for k in enc} for i in range(len(lines))]
    enc = tok(lines, return_special_tokens_mask=True)
    concat = {k: [x for row in enc[k] for x in row] for k in enc}
    total = len(concat["input_ids"]) // length * length
    return [{k: v[i:i + length] for k, v in concat.items()} for i in range(0, total, length)]


def stock_side(args, tok, lines, grouped: bool):
    from transformers import AutoModelForMaskedLM, DataCollatorForLanguageModeling

    examples = stock_examples(tok, lines, args.length, grouped)
    random.Random(args.seed).shuffle(examples)
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=args.seed)
    torch.manual_seed(args.seed)
    model = AutoModelForMaskedLM.from_pretrained(default_model()).train()

    def batches():
        while True:
            for i in range(0, len(examples) - args.batch_size + 1, args.batch_size):
                yield collator(examples[i:i + args.batch_size])

    def step(batch):
        return model(**batch).loss

    return model, batches(), step, lambda b: int(b["attention_mask"].sum())


def bertkit_side(args, tok, corpus: Path, cache: Path, masking: str):
    from bertkit.masking import VocabInfo, build_masker
    from bertkit.tasks.pretrain.batches import PretrainBatches
    from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus
    from bertkit.tasks.pretrain.model import build_pretrain_model
    from bertkit.training.prefetch import Prefetcher

    stream = tokenize_corpus([corpus], tok, cache)
    seqs = PackedSequences(stream, args.length, tok.cls_token_id, tok.sep_token_id)
    masker = build_masker(masking, VocabInfo.from_tokenizer(tok, stream.unigram))
    source = Prefetcher(PretrainBatches(seqs, args.batch_size, masker, args.seed, sbo=masking == "span"))
    torch.manual_seed(args.seed)
    model, _ = build_pretrain_model(default_model(), None, tok, sbo=masking == "span", sbo_weight=1.0)
    model.train()

    def batches():
        epoch = 0
        while True:
            yield from source.iter_batches(epoch)
            epoch += 1

    def step(batch):
        return model(**batch)["loss"]

    return model, batches(), step, lambda b: int(b["attention_mask"].sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data = Path(os.environ.get("BERTKIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--corpus", default=str(data / "corpus" / "train.txt"))
    ap.add_argument("--lines", type=int, default=4000, help="Corpus lines every side trains on.")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    quiet_transformers()
    before = load()
    lines = []
    with open(args.corpus, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                lines.append(line.strip())
            if len(lines) >= args.lines:
                break
    tok = load_tokenizer(default_model())
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        sides = {"stock run_mlm default (group_texts, 128)": stock_side(args, tok, lines, True),
                 "stock run_mlm --line_by_line": stock_side(args, tok, lines, False),
                 "bertkit token": bertkit_side(args, tok, corpus, Path(tmp) / "cache", "token"),
                 "bertkit span+SBO": bertkit_side(args, tok, corpus, Path(tmp) / "cache", "span")}
        optims = {n: torch.optim.AdamW(s[0].parameters(), lr=args.lr) for n, s in sides.items()}
        record = {n: {"step_s": [], "fetch_ms": [], "tokens": [], "loss": []} for n in sides}
        names = list(sides)
        for k in range(args.warmup + args.steps):
            for name in names[k % len(names):] + names[:k % len(names)]:
                model, it, step, count = sides[name]
                t0 = time.perf_counter()
                batch = next(it)
                t1 = time.perf_counter()
                loss = step(batch)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optims[name].step()
                optims[name].zero_grad(set_to_none=True)
                t2 = time.perf_counter()
                if k >= args.warmup:
                    r = record[name]
                    r["step_s"].append(t2 - t0)
                    r["fetch_ms"].append(1000 * (t1 - t0))
                    r["tokens"].append(count(batch))
                    r["loss"].append(float(loss.detach()))
            print(f"step {k + 1}/{args.warmup + args.steps} done", flush=True)
        del sides
    after = load()
    for name, r in record.items():
        rates = [t / s for t, s in zip(r["tokens"], r["step_s"])]
        results[name] = {
            "step_s_median": statistics.median(r["step_s"]), "step_s_min": min(r["step_s"]),
            "step_s_max": max(r["step_s"]), "real_tokens_per_s_median": statistics.median(rates),
            "real_tokens_per_s_min": min(rates), "real_tokens_per_s_max": max(rates),
            "real_tokens_per_step_median": statistics.median(r["tokens"]),
            "fetch_ms_median": statistics.median(r["fetch_ms"]),
            "fetch_share_median": statistics.median(f / 1000 / s for f, s in zip(r["fetch_ms"], r["step_s"])),
            "last_loss": r["loss"][-1], "steps": len(r["step_s"])}
    ref = results["stock run_mlm default (group_texts, 128)"]["real_tokens_per_s_median"]
    print(f"\n{torch.get_num_threads()} torch threads; batch {args.batch_size} x {args.length}, "
          f"{args.steps} interleaved steps per side after {args.warmup} warm-up; MiniLM-L6-H384 "
          f"(new MLM head), fp32 CPU, AdamW lr {args.lr}; load average before "
          f"{before['load_1m']:.2f}, after {after['load_1m']:.2f} ({before['cpus']} CPUs)")
    print("order: each step rotates the sides by one (step 1 starts with the first row below, "
          "step 2 with the second, ...)")
    width = max(map(len, results))
    print(f"  {'':<{width}}  {'real tok/s':>10}  {'min-max':>13}  {'s/step':>7}  {'batch ms':>8}  "
          f"{'tok/step':>8}  {'x stock default':>15}")
    for name, r in results.items():
        print(f"  {name:<{width}}  {r['real_tokens_per_s_median']:>10.1f}  "
              f"{r['real_tokens_per_s_min']:>6.1f}-{r['real_tokens_per_s_max']:<6.1f}  "
              f"{r['step_s_median']:>7.2f}  {r['fetch_ms_median']:>8.1f}  "
              f"{r['real_tokens_per_step_median']:>8.0f}  {r['real_tokens_per_s_median'] / ref:>15.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "threads": torch.get_num_threads(),
                                               "load_before": before, "load_after": after,
                                               "args": vars(args), "torch": torch.__version__},
                                              indent=2) + "\n")


if __name__ == "__main__":
    main()
