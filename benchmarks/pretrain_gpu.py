"""GPU pretraining throughput and model FLOPs utilisation (MFU) of a BERT-base config.

bertkit's training step (packed sequences, span masking + SBO, MLM logits only at masked
positions) with bf16 autocast, SDPA attention, fused AdamW and, with ``--compile``,
``torch.compile`` of the encoder; tokens per second and MFU at sequence lengths 128 and 512.

Model FLOPs per step (Kaplan et al., 2020; Chowdhery et al., 2022, appendix B):
``6 * N * tokens`` for the N non-embedding parameters of the encoder, plus the attention term
``12 * L * d * T`` per token (L layers, width d, length T), plus the output heads at the masked
(and SBO) positions, ``6 * (d*d + d*V) * predictions``. MFU = model FLOPs per second over the
GPU's dense bf16 peak (``--peak-tflops``; known for H100/H200 989, A100 312, L4 121, A10 125).

    python benchmarks/pretrain_gpu.py [--compile] [--steps 30] [--json benchmarks/results/pretrain_gpu.json]
    python benchmarks/pretrain_gpu.py --dry-run     # CPU check of the script: tiny model, 2 steps
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model, load_tokenizer, quiet_transformers  # noqa: E402
from bertkit.masking import VocabInfo, build_masker  # noqa: E402
from bertkit.tasks.pretrain.batches import batch_generator  # noqa: E402
from bertkit.tasks.pretrain.model import build_pretrain_model  # noqa: E402
from bertkit.training.optim import build_optimizer  # noqa: E402

PEAKS = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10": 125e12}


def peak_flops(device: torch.device, override: float | None) -> float | None:
    if override:
        return override * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAKS.items() if k in name), None)


def model_flops(model, T: int, tokens: int, predictions: int) -> float:
    cfg = model.mlm.config
    emb = sum(p.numel() for n, p in model.encoder.named_parameters() if "embeddings" in n)
    n = sum(p.numel() for p in model.encoder.parameters()) - emb
    d, L, V = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
    return 6 * n * tokens + 12 * L * d * T * tokens + 6 * (d * d + d * V) * predictions


def batches(rows: np.ndarray | None, vocab: VocabInfo, masker, B: int, T: int, cls: int, sep: int, n: int):
    out = []
    for k in range(n):
        if rows is not None:
            start = (k * B * (T - 2)) % max(len(rows) - B * (T - 2), 1)
            body = torch.from_numpy(rows[start:start + B * (T - 2)].astype(np.int64)).view(B, T - 2)
        else:
            g = torch.Generator().manual_seed(k)
            body = vocab.normal_ids[torch.randint(len(vocab.normal_ids), (B, T - 2), generator=g)]
        ids = torch.cat([torch.full((B, 1), cls), body, torch.full((B, 1), sep)], 1)
        m = masker(ids, batch_generator(0, 0, k))
        out.append({"input_ids": m.input_ids, "attention_mask": torch.ones_like(ids),
                    "labels": m.labels, "sbo_boundaries": m.sbo_boundaries})
    return out


def run(args, T: int, B: int, device, dtype, tok, stream) -> dict:
    torch.manual_seed(0)
    model, info = build_pretrain_model(None, args.size, tok, sbo=True, sbo_weight=1.0)
    model.to(device).train()
    if args.compile:
        model.encoder.compile()
    opt = build_optimizer(model, 1e-4, 0.01, device)  # fused AdamW on CUDA
    vocab = VocabInfo.from_tokenizer(tok, stream.unigram if stream is not None else None)
    masker = build_masker("span", vocab)
    data = batches(np.asarray(stream.ids) if stream is not None else None, vocab, masker, B, T,
                   tok.cls_token_id, tok.sep_token_id, args.warmup + args.steps)
    data = [{k: v.to(device, non_blocking=True) for k, v in b.items()} for b in data]
    preds = 0

    def step(b):
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = model(**b)["loss"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for b in data[:args.warmup]:
        step(b)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for b in data[args.warmup:]:
        loss = step(b)
        preds += int((b["labels"] != -100).sum()) + int((b["sbo_boundaries"][..., 0] >= 0).sum())
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    tokens = args.steps * B * T
    flops = model_flops(model, T, tokens, preds)
    peak = peak_flops(device, args.peak_tflops)
    out = {"seq_len": T, "batch_size": B, "steps": args.steps, "tokens_per_s": tokens / seconds,
           "model_tflops_per_s": flops / seconds / 1e12, "mfu": flops / seconds / peak if peak else None,
           "final_loss": float(loss.detach()), "parameters": info["parameters"], "compile": args.compile}
    if device.type == "cuda":
        out["max_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        torch.cuda.reset_peak_memory_stats(device)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data = Path(os.environ.get("BERTKIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--corpus", default=str(data / "corpus" / "valid.txt"),
                    help="Text to pack (random ids if missing).")
    ap.add_argument("--size", default="base", help="tiny, small, base or large.")
    ap.add_argument("--lengths", default="128,512")
    ap.add_argument("--batch-sizes", default="256,64", help="Per length, in the same order.")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--peak-tflops", type=float, default=None)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny model, 2 steps: checks the script.")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    quiet_transformers()
    if args.dry_run:
        args.size, args.steps, args.warmup = "tiny", 2, 1
        args.lengths, args.batch_sizes, args.compile = "32,64", "4,2", False
    device = torch.device("cuda" if torch.cuda.is_available() and not args.dry_run else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        dtype = torch.bfloat16
    else:
        dtype = None
        if not args.dry_run:
            print("no CUDA device: use --dry-run to check the script on a CPU")
            sys.exit(1)
    tok = load_tokenizer(default_model())
    stream = None
    if Path(args.corpus).is_file():
        from bertkit.tasks.pretrain.data import tokenize_corpus

        stream = tokenize_corpus([args.corpus], tok, args.cache_dir)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (dry run)"
    print(f"device {name}; BERT-{args.size}; bf16={dtype is not None}; SDPA; fused AdamW="
          f"{device.type == 'cuda'}; compile={args.compile}", flush=True)
    results = []
    for T, B in zip(map(int, args.lengths.split(",")), map(int, args.batch_sizes.split(","))):
        r = run(args, T, B, device, dtype, tok, stream)
        results.append(r)
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "n/a"
        print(f"T={T:4d} B={B:4d}: {r['tokens_per_s']:>12,.0f} tokens/s, "
              f"{r['model_tflops_per_s']:.1f} model TFLOP/s, MFU {mfu}, loss {r['final_loss']:.3f}",
              flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": name, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
