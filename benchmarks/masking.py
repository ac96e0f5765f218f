"""Masking speed, measured fairly: bertkit's strategies vs ``DataCollatorForLanguageModeling``.

Two figures, each labelled:

1. Masking only, on equal input: every side gets the *same* ``[B, T]`` LongTensors of token ids
   (packed 128-token rows of the shared corpus, ``$BERTKIT_DATA/corpus/train.txt``). The stock
   side is ``torch_mask_tokens(ids.clone(), special_tokens_mask)`` with the special-tokens mask
   given as a tensor, as ``run_mlm.py`` provides it (``return_special_tokens_mask=True``); the row
   without it (the collator then asks the tokenizer row by row) is shown too.
2. The full collate path, from Python lists of ids to masked, padded tensors: the stock collator
   called on the examples a ``Trainer`` hands it (dicts of id lists and special-tokens masks)
   vs bertkit's ``torch.tensor(lists)`` plus its masker.

bertkit's whole-word and span maskers run their compiled kernels (numba, the default); the rows
marked "NumPy path" run the same maskers with ``jit = False`` (same masks, the former
implementation), for comparison. ``--jit-cost`` also times, in fresh processes, the first masking
call with an empty numba cache (compilation) and with the cache filled (loading).

The sides are interleaved: each repetition times one pass of every side over the same batches
(in a rotating order), one thread (``--threads``). Figures are sequences per second, median
over the repetitions with min-max, and each bertkit side's ratio to the stock side is the median
of the per-repetition ratios. Rates use CPU time of the timing thread (wall time too in the
JSON), since the machine may be shared: the load average is recorded before and after.

    python benchmarks/masking.py [--batches 50 --repeats 15] [--json benchmarks/results/masking/masking.json] [--jit-cost]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model, load_tokenizer  # noqa: E402
from bertkit.masking import VocabInfo, build_masker  # noqa: E402
from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus  # noqa: E402


def numba_version() -> str | None:
    try:
        import numba
    except ImportError:
        return None
    return numba.__version__


def load() -> dict:
    """The machine's load (``_interleave.load_average``)."""
    from _interleave import load_average

    return load_average()


def interleaved(sides: dict, batches: list, repeats: int, reference: str) -> dict:
    """Time one pass of every side over ``batches`` per repetition, in a rotating order."""
    names = list(sides)
    cpu = {n: [] for n in names}
    wall = {n: [] for n in names}
    rows = sum(len(b) if not isinstance(b, torch.Tensor) else b.shape[0] for b in batches)
    for side in names:  # warm-up
        for b in batches[:3]:
            sides[side](b)
    for r in range(repeats):
        for side in names[r % len(names):] + names[:r % len(names)]:
            fn = sides[side]
            t, w = time.thread_time(), time.perf_counter()
            for b in batches:
                fn(b)
            cpu[side].append(rows / (time.thread_time() - t))
            wall[side].append(rows / (time.perf_counter() - w))
    out = {}
    for side in names:
        ratios = [a / b for a, b in zip(cpu[side], cpu[reference])]
        out[side] = {"median": statistics.median(cpu[side]), "min": min(cpu[side]),
                     "max": max(cpu[side]), "wall_median": statistics.median(wall[side]),
                     "ratio_to_stock": statistics.median(ratios),
                     "ratio_min": min(ratios), "ratio_max": max(ratios)}
    return out


JIT_PROBE = """
import sys, time, torch
sys.path.insert(0, {root!r})
from bertkit.encoders import default_model, load_tokenizer
from bertkit.masking import VocabInfo, build_masker
vocab = VocabInfo.from_tokenizer(load_tokenizer(default_model()))
ids = vocab.normal_ids[torch.randint(len(vocab.normal_ids), (4, 32))]
t = time.perf_counter()
for name in ("token", "wwm", "span"):
    build_masker(name, vocab)(ids, torch.Generator().manual_seed(0))
print(time.perf_counter() - t)
"""


def jit_cost() -> dict:
    """Seconds of the first token + wwm + span masking calls in a fresh process (numba imported,
    kernels compiled or loaded), with an empty cache, then with the cache it left."""
    root = str(Path(__file__).resolve().parents[1])
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, OMP_NUM_THREADS="1")
        for label in ("cold_cache_s", "warm_cache_s"):
            res = subprocess.run([sys.executable, "-c", JIT_PROBE.format(root=root)], env=env,
                                 capture_output=True, text=True, check=True)
            out[label] = float(res.stdout.strip().splitlines()[-1])
    return out


def show(title: str, results: dict) -> None:
    width = max(map(len, results))
    print(title)
    print(f"  {'':<{width}}  {'seq/s (CPU)':>12}  {'min-max':>17}  {'wall':>8}  {'x stock (min-max)':>20}")
    for name, r in results.items():
        print(f"  {name:<{width}}  {r['median']:>12,.0f}  {r['min']:>8,.0f}-{r['max']:<8,.0f}  "
              f"{r['wall_median']:>8,.0f}  {r['ratio_to_stock']:>6.2f} ({r['ratio_min']:.2f}-{r['ratio_max']:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data = Path(os.environ.get("BERTKIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--corpus", default=str(data / "corpus" / "train.txt"))
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--jit-cost", action="store_true",
                    help="also time the first call in fresh processes (cold and warm numba cache)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    before = load()
    tok = load_tokenizer(default_model())
    stream = tokenize_corpus([args.corpus], tok, args.cache_dir)
    packed = PackedSequences(stream, args.length, tok.cls_token_id, tok.sep_token_id)
    n = min(args.batches * args.batch_size, len(packed))
    order = np.random.default_rng(0).permutation(len(packed))[:n]
    tensors = [torch.from_numpy(packed.get(np.sort(order[i:i + args.batch_size])))
               for i in range(0, n, args.batch_size)]
    vocab = VocabInfo.from_tokenizer(tok, stream.unigram)
    special = [vocab.is_special[b] for b in tensors]

    from transformers import DataCollatorForLanguageModeling

    stock = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=0)
    index = {id(b): i for i, b in enumerate(tensors)}
    g = torch.Generator().manual_seed(0)
    maskers = {name: build_masker(name, vocab) for name in ("token", "wwm", "span")}
    sides = {"stock torch_mask_tokens": lambda b: stock.torch_mask_tokens(b.clone(), special[index[id(b)]]),
             "stock torch_mask_tokens, no special mask": lambda b: stock.torch_mask_tokens(b.clone())}
    for name, m in maskers.items():
        sides[f"bertkit {name}"] = (lambda m: lambda b: m(b, g))(m)
    for name in ("wwm", "span"):
        m = build_masker(name, vocab)
        m.jit = False
        sides[f"bertkit {name}, NumPy path"] = (lambda m: lambda b: m(b, g))(m)
    masking = interleaved(sides, tensors, args.repeats, "stock torch_mask_tokens")

    examples = [[{"input_ids": row, "special_tokens_mask": [int(x) for x in sp]}
                 for row, sp in zip(b.tolist(), s.tolist())] for b, s in zip(tensors, special)]
    collate_sides = {"stock collator (lists -> padded, masked)": lambda ex: stock(ex)}
    for name, m in maskers.items():
        collate_sides[f"bertkit {name} (lists -> tensor, masked)"] = (
            lambda m: lambda ex: m(torch.tensor([e["input_ids"] for e in ex]), g))(m)
    collate = interleaved(collate_sides, examples, args.repeats, "stock collator (lists -> padded, masked)")
    after = load()
    cost = jit_cost() if args.jit_cost else None

    print(f"batches of {args.batch_size} x {args.length} packed tokens, {len(tensors)} batches "
          f"({n} sequences) per pass, {args.repeats} interleaved passes, {args.threads} thread(s); "
          f"load average before {before['load_1m']:.2f}, after {after['load_1m']:.2f} "
          f"({before['cpus']} CPUs)")
    print("order: each pass rotates the sides by one (pass 1 starts with the first side, pass 2 "
          "with the second, ...), as section 1 lists them")
    show("1. masking only, same [B, T] tensors (sequences/s, CPU time of the thread):", masking)
    show("2. full collate path, Python lists -> masked tensors (sequences/s):", collate)
    jit = maskers["wwm"].jit
    print(f"bertkit maskers compiled: {jit} (numba {numba_version()})")
    if cost:
        print(f"first token+wwm+span calls in a fresh process: {cost['cold_cache_s']:.1f} s with an "
              f"empty numba cache (compiling), {cost['warm_cache_s']:.1f} s with it filled (loading)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "masking_same_tensor": masking, "collate_from_lists": collate,
            "load_before": before, "load_after": after, "threads": args.threads,
            "sequences_per_pass": n, "batch_size": args.batch_size, "length": args.length,
            "repeats": args.repeats, "torch": torch.__version__, "compiled": jit,
            "numba": numba_version(), "jit_cost": cost}, indent=2) + "\n")


if __name__ == "__main__":
    main()
