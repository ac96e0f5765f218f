"""GPU pretraining throughput and model FLOPs utilisation (MFU): bertkit vs the stock recipe.

Two sides train a from-scratch BERT of one size (``--size``, BERT-base by default) on the same
text, in the same process, at each sequence length (128 and 512 by default):

- ``bertkit``: ``bertkit pretrain``'s step: packed sequences cut from the tokenised corpus,
  span masking + SBO done ahead by the prefetch thread, MLM logits only at the masked positions.
- ``stock``: ``BertForMaskedLM`` fed by ``DataCollatorForLanguageModeling`` (15%) over
  ``run_mlm.py``'s ``group_texts`` blocks (full blocks, no padding); the collator runs in the
  step, as in a ``Trainer`` with ``dataloader_num_workers=0``; vocabulary logits at every position.

Both use bf16 autocast, SDPA attention, fused AdamW (lr 1e-4) and clipping at 1.0; with
``--compile``, ``torch.compile`` (bertkit: the whole forward, encoder, heads and losses, as
``bertkit pretrain --compile``; stock: the whole model, as ``Trainer(torch_compile=True)``). After ``--warmup`` steps each, the sides
alternate step by step (the order rotating each step) for ``--steps`` steps; every step is timed
between device synchronisations (the timing's own: bertkit's loop reads nothing back per step).
Figures are medians with min-max over steps: seconds per step, real (non-padding) tokens per
second end to end, the same without the time spent getting the batch ("compute"), the batch time,
and peak memory (the side's own weights, gradients and optimiser state plus its steps' largest
transient allocation). The ratio bertkit/stock of real tokens per second is the figure.

Model FLOPs per step (Kaplan et al., 2020; Chowdhery et al., 2022, appendix B), one definition
for both sides (the useful work): ``6 * N * tokens`` for the N non-embedding parameters of the
encoder, plus the attention term ``12 * L * d * T`` per token (L layers, width d, length T), plus
the output heads at the masked (and SBO) positions, ``6 * (d*d + d*V) * predictions``. MFU =
model FLOPs per second over the GPU's dense bf16 peak (``--peak-tflops``; known: H100/H200 989,
A100 312, L40S 362, L4 121, A10 125). The stock side's full-vocabulary projection at unmasked
positions is work it does but not useful work, so it lowers its MFU.

    python benchmarks/pretrain_gpu.py [--compile] [--steps 20] [--json benchmarks/results/gpu/pretrain_gpu.json]
    python benchmarks/pretrain_gpu.py --dry-run     # CPU check of the script: tiny model, 2 steps
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import quiet_transformers  # noqa: E402

PEAKS = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10": 125e12}
STOCK, BERTKIT = "stock", "bertkit"


def peak_flops(device: torch.device, override: float | None) -> float | None:
    """The device's dense bf16 peak in FLOP/s (``override`` in TFLOP/s wins; None if unknown)."""
    if override:
        return override * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAKS.items() if k in name), None)


def model_flops(encoder: torch.nn.Module, config, T: int, tokens: int, predictions: int) -> float:
    """Useful model FLOPs of ``tokens`` tokens at length T with ``predictions`` head outputs."""
    emb = sum(p.numel() for n, p in encoder.named_parameters() if "embeddings" in n)
    n = sum(p.numel() for p in encoder.parameters()) - emb
    d, L, V = config.hidden_size, config.num_hidden_layers, config.vocab_size
    return 6 * n * tokens + 12 * L * d * T * tokens + 6 * (d * d + d * V) * predictions


def read_lines(path: str | None, limit: int) -> list[str]:
    """The first ``limit`` non-blank lines of ``path`` (none if there is no such file)."""
    lines: list[str] = []
    if path and Path(path).is_file():
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    lines.append(line.strip())
                if len(lines) >= limit:
                    break
    return lines


def random_lines(tok, n: int, seed: int = 0) -> list[str]:
    """Text of random vocabulary words, when no corpus is at hand."""
    rng = random.Random(seed)
    words = [w for w in tok.get_vocab() if w.isalpha() and len(w) > 2]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(10, 40))) for _ in range(n)]


def owned_bytes(model: torch.nn.Module, opt: torch.optim.Optimizer) -> int:
    """Bytes of the side's weights, gradients (as large as the weights) and optimiser state."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    state = sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values()
                if torch.is_tensor(v))
    return 2 * params + state


class Side:
    """One side of the comparison: its model, optimiser, batch iterator and records."""

    def __init__(self, name, model, encoder, config, batches, loss_of, device, compile_):
        self.name, self.model, self.encoder, self.config = name, model, encoder, config
        self.batches, self.loss_of, self.device = batches, loss_of, device
        self.opt = build_adamw(model, device)
        if compile_:
            model.compile(dynamic=False)  # bertkit: the whole forward, as pretrain --compile
        self.rec = {"step_s": [], "fetch_s": [], "tokens": [], "predictions": [], "loss": [],
                    "extra_bytes": []}

    def step(self, record: bool) -> None:
        sync(self.device)
        before = torch.cuda.memory_allocated(self.device) if self.device.type == "cuda" else 0
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        t0 = time.perf_counter()
        batch = next(self.batches)
        mask = batch.get("attention_mask")  # bertkit's full rows carry none
        tokens = int(mask.sum()) if mask is not None else batch["input_ids"].numel()
        preds = int((batch["mlm_labels" if "mlm_labels" in batch else "labels"] != -100).sum())
        if "sbo_boundaries" in batch:
            preds += int((batch["sbo_boundaries"][..., 0] >= 0).sum())
        batch = {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}
        t1 = time.perf_counter()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            loss = self.loss_of(self.model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        value = float(loss.detach())  # a read per step for the record (the timing syncs anyway)
        sync(self.device)
        t2 = time.perf_counter()
        if record:
            r = self.rec
            r["step_s"].append(t2 - t0)
            r["fetch_s"].append(t1 - t0)
            r["tokens"].append(tokens)
            r["predictions"].append(preds)
            r["loss"].append(value)
            if self.device.type == "cuda":
                r["extra_bytes"].append(torch.cuda.max_memory_allocated(self.device) - before)

    def summary(self, T: int, peak: float | None) -> dict:
        r = self.rec
        rates = [t / s for t, s in zip(r["tokens"], r["step_s"])]
        compute = [t / (s - f) for t, s, f in zip(r["tokens"], r["step_s"], r["fetch_s"])]
        flops = [model_flops(self.encoder, self.config, T, t, p) / s
                 for t, p, s in zip(r["tokens"], r["predictions"], r["step_s"])]
        out = {"steps": len(r["step_s"]),
               "step_s_median": statistics.median(r["step_s"]), "step_s_min": min(r["step_s"]),
               "step_s_max": max(r["step_s"]),
               "real_tokens_per_s_median": statistics.median(rates),
               "real_tokens_per_s_min": min(rates), "real_tokens_per_s_max": max(rates),
               "compute_tokens_per_s_median": statistics.median(compute),
               "fetch_ms_median": 1000 * statistics.median(r["fetch_s"]),
               "real_tokens_per_step": statistics.median(r["tokens"]),
               "predictions_per_step": statistics.median(r["predictions"]),
               "model_tflops_per_s_median": statistics.median(flops) / 1e12,
               "mfu_median": statistics.median(flops) / peak if peak else None,
               "mfu_min": min(flops) / peak if peak else None,
               "mfu_max": max(flops) / peak if peak else None,
               "first_loss": r["loss"][0], "last_loss": r["loss"][-1],
               "parameters": sum(p.numel() for p in self.model.parameters())}
        out["finite"] = all(np.isfinite(r["loss"]))
        if r["extra_bytes"]:
            out["peak_memory_gib"] = (owned_bytes(self.model, self.opt) + max(r["extra_bytes"])) / 2**30
        return out


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build_adamw(model: torch.nn.Module, device: torch.device) -> torch.optim.Optimizer:
    """AdamW lr 1e-4, weight decay 0.01 (not on biases/norms), fused on CUDA: bertkit's
    optimiser, and what ``Trainer`` builds (``adamw_torch_fused``) for the stock side."""
    from bertkit.training.optim import build_optimizer

    return build_optimizer(model, 1e-4, 0.01, device)


def stock_side(args, tok, lines: list[str], T: int, B: int, device) -> Side:
    """``BertForMaskedLM`` + ``DataCollatorForLanguageModeling`` over ``group_texts`` blocks."""
    from transformers import BertForMaskedLM, DataCollatorForLanguageModeling

    from bertkit.tasks.pretrain.model import scratch_config

    enc = tok(lines, return_special_tokens_mask=True)
    concat = {k: [x for row in enc[k] for x in row] for k in enc}
    total = len(concat["input_ids"]) // T * T
    examples = [{k: v[i:i + T] for k, v in concat.items()} for i in range(0, total, T)]
    if len(examples) < B:
        raise SystemExit(f"stock side: {len(examples)} blocks of {T} tokens < batch size {B}: "
                         f"more corpus lines needed (--lines)")
    random.Random(args.seed).shuffle(examples)
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=args.seed)
    torch.manual_seed(args.seed)
    config = scratch_config(args.size, tok)
    model = BertForMaskedLM._from_config(config, attn_implementation="sdpa").to(device).train()

    def batches():
        while True:
            for i in range(0, len(examples) - B + 1, B):
                yield dict(collator(examples[i:i + B]))

    return Side(STOCK, model, model.bert, config, batches(),
                lambda m, b: m(**b).loss, device, args.compile)


def bertkit_side(args, tok, corpus: Path, T: int, B: int, device) -> Side:
    """``bertkit pretrain``'s batches (packed, span-masked ahead in a thread) and model."""
    from bertkit.masking import VocabInfo, build_masker
    from bertkit.tasks.pretrain.batches import PretrainBatches
    from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus
    from bertkit.tasks.pretrain.model import build_pretrain_model
    from bertkit.training.prefetch import Prefetcher

    stream = tokenize_corpus([corpus], tok, args.cache_dir)
    seqs = PackedSequences(stream, T, tok.cls_token_id, tok.sep_token_id)
    masker = build_masker("span", VocabInfo.from_tokenizer(tok, stream.unigram))
    source = Prefetcher(PretrainBatches(seqs, B, masker, args.seed, sbo=True))
    if source.num_batches(0) < 1:
        raise SystemExit(f"bertkit side: fewer than {B} sequences of {T} tokens: more corpus "
                         f"lines needed (--lines)")
    torch.manual_seed(args.seed)
    model, _ = build_pretrain_model(None, args.size, tok, sbo=True, sbo_weight=1.0)
    model.to(device).train()

    def batches():
        epoch = 0
        while True:
            yield from source.iter_batches(epoch)
            epoch += 1

    return Side(BERTKIT, model, model.encoder, model.mlm.config, batches(),
                lambda m, b: m(**b)["loss"], device, args.compile)


def run_length(args, tok, lines, corpus: Path, T: int, B: int, device, peak) -> dict:
    """Both sides at length T, batch B: warm-up, then interleaved timed steps."""
    sides = {}
    if not args.no_stock:
        sides[STOCK] = stock_side(args, tok, lines, T, B, device)
    sides[BERTKIT] = bertkit_side(args, tok, corpus, T, B, device)
    t0 = time.perf_counter()
    for side in sides.values():
        for _ in range(args.warmup):
            side.step(record=False)
    warm_s = time.perf_counter() - t0
    names = list(sides)
    for k in range(args.steps):
        for name in names[k % len(names):] + names[:k % len(names)]:
            sides[name].step(record=True)
    out = {"seq_len": T, "batch_size": B, "compile": args.compile, "warmup_s": warm_s,
           "sides": {n: s.summary(T, peak) for n, s in sides.items()}}
    if STOCK in out["sides"]:
        kit, stock = out["sides"][BERTKIT], out["sides"][STOCK]
        out["ratio_real_tokens_per_s"] = kit["real_tokens_per_s_median"] / stock["real_tokens_per_s_median"]
        out["ratio_compute_tokens_per_s"] = (kit["compute_tokens_per_s_median"]
                                             / stock["compute_tokens_per_s_median"])
    del sides
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data = Path(os.environ.get("BERTKIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--corpus", default=str(data / "corpus" / "train.txt"),
                    help="Text both sides train on (random words if missing).")
    ap.add_argument("--lines", type=int, default=20000, help="Corpus lines read.")
    ap.add_argument("--vocab", default="scivocab-uncased", help="Vocabulary (bertkit --vocab).")
    ap.add_argument("--size", default="base", help="tiny, small, base or large.")
    ap.add_argument("--lengths", default="128,512")
    ap.add_argument("--batch-sizes", default="256,64", help="Per length, in the same order.")
    ap.add_argument("--steps", type=int, default=20, help="Timed steps per side and length.")
    ap.add_argument("--warmup", type=int, default=3, help="Untimed steps per side first.")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--no-stock", action="store_true", help="bertkit's side only.")
    ap.add_argument("--peak-tflops", type=float, default=None)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cache-dir", default=None, help="Tokenised-corpus cache.")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny model, 2 steps: checks the script.")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    quiet_transformers()
    if args.dry_run:
        args.size, args.steps, args.warmup, args.lines = "tiny", 2, 1, min(args.lines, 400)
        args.lengths, args.batch_sizes, args.compile = "32,64", "4,2", False
    device = torch.device("cuda" if torch.cuda.is_available() and not args.dry_run else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    elif not args.dry_run:
        print("no CUDA device: use --dry-run to check the script on a CPU")
        sys.exit(1)
    from bertkit.vocab.registry import load_tokenizer

    tok = load_tokenizer(args.vocab)
    lines = read_lines(args.corpus, args.lines) or random_lines(tok, args.lines)
    import tempfile

    peak = peak_flops(device, args.peak_tflops)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (dry run)"
    print(f"device {name}; BERT-{args.size} from scratch ({args.vocab}); bf16 autocast="
          f"{device.type == 'cuda'}; SDPA; fused AdamW={device.type == 'cuda'}; compile="
          f"{args.compile}; {len(lines)} lines; {args.steps} interleaved steps per side after "
          f"{args.warmup} warm-up", flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if args.cache_dir is None:
            args.cache_dir = str(Path(tmp) / "cache")
        for T, B in zip(map(int, args.lengths.split(",")), map(int, args.batch_sizes.split(","))):
            r = run_length(args, tok, lines, corpus, T, B, device, peak)
            results.append(r)
            for side, s in r["sides"].items():
                mfu = f"{100 * s['mfu_median']:.1f}%" if s["mfu_median"] is not None else "n/a"
                mem = f", peak {s['peak_memory_gib']:.1f} GiB" if "peak_memory_gib" in s else ""
                print(f"T={T:4d} B={B:4d} {side:>7}: {s['real_tokens_per_s_median']:>12,.0f} real "
                      f"tokens/s ({s['real_tokens_per_s_min']:,.0f}-{s['real_tokens_per_s_max']:,.0f}),"
                      f" {1000 * s['step_s_median']:.1f} ms/step (batch {s['fetch_ms_median']:.1f} ms),"
                      f" {s['model_tflops_per_s_median']:.1f} model TFLOP/s, MFU {mfu}{mem}, loss "
                      f"{s['first_loss']:.3f} -> {s['last_loss']:.3f}", flush=True)
            if "ratio_real_tokens_per_s" in r:
                print(f"T={T:4d}: bertkit / stock real tokens/s = {r['ratio_real_tokens_per_s']:.2f}x "
                      f"(compute only {r['ratio_compute_tokens_per_s']:.2f}x)", flush=True)
    report = {"device": name, "torch": torch.__version__, "peak_flops": peak,
              "args": vars(args), "results": results}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
