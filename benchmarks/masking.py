"""Masking speed: bertkit's token / whole-word / span strategies vs the stock collators.

Every strategy masks the same packed 128-token batches of 32 sequences cut from the shared corpus
(``$BERTKIT_DATA/corpus/train.txt``, or ``--corpus``); the figure is sequences per second over
``--batches`` batches after a short warm-up, single-threaded by default (``--threads``), as a data
pipeline runs. The stock ``DataCollatorForLanguageModeling`` gets the same sequences as the
examples a ``Trainer`` would hand it (dicts of id lists); its whole-word mode needs offset
mappings in transformers 5 (derived here from the ``##`` pieces) and disables random replacement.

    python benchmarks/masking.py [--batches 200] [--json benchmarks/results/masking.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model, load_tokenizer  # noqa: E402
from bertkit.masking import VocabInfo, build_masker, word_starts  # noqa: E402
from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus  # noqa: E402


def timed(fn, batches, warmup=3) -> float:
    for b in batches[:warmup]:
        fn(b)
    start = time.perf_counter()
    n = 0
    for b in batches:
        fn(b)
        n += len(b)
    return n / (time.perf_counter() - start)


def offsets_from_pieces(ids: torch.Tensor, vocab: VocabInfo) -> list[list[tuple[int, int]]]:
    """Character offsets consistent with the word structure: a ``##`` piece starts where the
    previous piece ended, a new word one character later; special tokens get (0, 0)."""
    starts = word_starts(ids, vocab)
    special = vocab.is_special[ids]
    begin = torch.cumsum(starts.long(), 1) + torch.arange(ids.shape[1])  # one char a piece, a space before words
    end = begin + 1
    out = []
    for b, e, s in zip(begin.tolist(), end.tolist(), special.tolist()):
        out.append([(0, 0) if sp else (x, y) for x, y, sp in zip(b, e, s)])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data = Path(os.environ.get("BERTKIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--corpus", default=str(data / "corpus" / "train.txt"))
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tok = load_tokenizer(default_model())
    stream = tokenize_corpus([args.corpus], tok, args.cache_dir)
    packed = PackedSequences(stream, args.length, tok.cls_token_id, tok.sep_token_id)
    n = min(args.batches * args.batch_size, len(packed))
    order = np.random.default_rng(0).permutation(len(packed))[:n]
    index_batches = [order[i:i + args.batch_size] for i in range(0, n, args.batch_size)]
    vocab = VocabInfo.from_tokenizer(tok, stream.unigram)
    results = {}
    g = torch.Generator().manual_seed(0)
    for name in ("token", "wwm", "span"):
        masker = build_masker(name, vocab)
        results[f"bertkit {name}"] = timed(
            lambda idx: masker(torch.from_numpy(packed.get(idx)), g), index_batches)

    from transformers import DataCollatorForLanguageModeling

    examples = [[{"input_ids": row} for row in packed.get(idx).tolist()] for idx in index_batches]
    stock = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=0)
    pos = {"i": 0}

    def run_stock(collator, batches):
        def call(_):
            collator(batches[pos["i"] % len(batches)])
            pos["i"] += 1
        return call

    results["stock token"] = timed(run_stock(stock, examples), examples)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wwm = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, whole_word_mask=True, seed=0)
        with_offsets = []
        for idx, exs in zip(index_batches, examples):
            offs = offsets_from_pieces(torch.from_numpy(packed.get(idx)), vocab)
            with_offsets.append([{**e, "offset_mapping": o} for e, o in zip(exs, offs)])
        pos["i"] = 0
        results["stock whole-word (no random replacement)"] = timed(run_stock(wwm, with_offsets), with_offsets)
    except TypeError as exc:  # older transformers without whole_word_mask
        print(f"stock whole-word collator unavailable: {exc}")
    width = max(map(len, results))
    print(f"sequences/s, batches of {args.batch_size} x {args.length} packed tokens, "
          f"{n} sequences, {args.threads} thread(s)")
    for name, rate in results.items():
        print(f"  {name:<{width}}  {rate:>10,.0f}")
    ratio = results["bertkit span"] / results["stock token"]
    print(f"span / stock token: {ratio:.2f}x (target >= 1)")
    if args.json:
        Path(args.json).write_text(json.dumps({"sequences_per_s": results, "span_over_stock_token": ratio,
                                               "threads": args.threads, "sequences": n,
                                               "batch_size": args.batch_size, "length": args.length},
                                              indent=2) + "\n")


if __name__ == "__main__":
    main()
