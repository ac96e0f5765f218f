"""This machine's fp32 and bf16 matrix-product peak (GFLOP/s), measured in the same run, and the
model FLOPs that turn a throughput into a share of that peak (MFU).

The peak is what the CPU's matrix kernels (oneDNN/MKL behind ``torch.nn.functional.linear``)
reach on a few shapes: squares of 512, 1024 and 2048, and the feed-forward products of MiniLM-L6
(4096 tokens x 384 -> 1536) and BERT-base (4096 x 768 -> 3072). Every repeat measures every shape
in fp32 and in bf16 (bf16 inputs and weights, as autocast runs a linear layer), the two sides
interleaved (fp32 first on even repeats, bf16 first on odd ones; benchmarks/_interleave.py). One
measurement runs the product until at least ``--seconds`` have passed (after one untimed warm-up
call) and gives 2 M N K x calls / time. Time is wall-clock and, beside it, process CPU time divided
by the threads used (less sensitive to other jobs on a shared machine: with one thread it is the
work done); the 1-minute load average is recorded before and after each measurement, and above
``threads + 0.5`` the measurement is marked SHARED. Figures: median (min-max) over repeats; a
precision's peak is the highest median over the shapes.

The CPU's matrix features are printed first (AMX-BF16, AVX512-BF16, torch's CPU capability), and
whether ``--precision auto`` picks bf16 here (:func:`bertkit.training.devices.auto_dtype`).

MFU (model FLOPs utilisation; Chowdhery et al., 2022, "PaLM", appendix B): a training step of a
transformer encoder does 6 N + 12 L H T FLOPs per token (N non-embedding parameters, L layers,
H hidden size, T sequence length: 2 FLOPs per multiply-add, forward once and backward twice; the
attention scores and their weighted sum are 4 L H T forward); inference does a third of that.
:func:`model_flops_per_token` gives it for a Hugging Face BERT-style model, :func:`mfu` the share.
The FLOPs count the model's arithmetic, not the work a kernel really does (padding, recomputation).

Usage:
    OMP_NUM_THREADS=1 python benchmarks/cpu_peak.py --threads 1 [--repeat 5] [--seconds 0.5] \\
        [--log benchmarks/results/cpu_peak/cpu_peak_1thread.log] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interleave import load1, logger, shared_note, side_order, spread  # noqa: E402

# name: (M, K, N) of y[M, N] = x[M, K] @ W[N, K]^T
SHAPES = {
    "square 512": (512, 512, 512),
    "square 1024": (1024, 1024, 1024),
    "square 2048": (2048, 2048, 2048),
    "MiniLM FFN 4096x384->1536": (4096, 384, 1536),
    "BERT-base FFN 4096x768->3072": (4096, 768, 3072),
}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def cpu_features() -> dict:
    """The CPU's name, matrix-relevant flags and what ``--precision auto`` chooses here."""
    from bertkit.training.devices import _cpu_flags, auto_dtype, cpu_has_amx_bf16

    flags = _cpu_flags()
    name = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                name = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    return {"cpu": name, "torch": torch.__version__,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "amx_bf16_flag": "amx_bf16" in flags, "avx512_bf16_flag": "avx512_bf16" in flags,
            "avx512f_flag": "avx512f" in flags, "torch_amx_tile": cpu_has_amx_bf16(),
            "auto_precision": auto_dtype(torch.device("cpu"))[1]}


def measure(shape: tuple[int, int, int], dtype: torch.dtype, seconds: float, threads: int) -> dict:
    """GFLOP/s of ``F.linear`` on ``shape`` (M, K, N) in ``dtype``: wall-clock and CPU-time based."""
    m, k, n = shape
    g = torch.Generator().manual_seed(0)
    x = torch.randn(m, k, generator=g).to(dtype)
    w = torch.randn(n, k, generator=g).to(dtype)
    F.linear(x, w)  # warm-up: kernel selection, first-touch of the output
    calls, wall0, cpu0 = 0, time.perf_counter(), time.process_time()
    while True:
        F.linear(x, w)
        calls += 1
        wall = time.perf_counter() - wall0
        if wall >= seconds:
            break
    cpu = (time.process_time() - cpu0) / threads
    flops = 2.0 * m * k * n * calls
    return {"gflops_wall": flops / wall / 1e9, "gflops_cpu": flops / max(cpu, 1e-9) / 1e9,
            "calls": calls, "wall_s": wall}


def non_embedding_parameters(model: torch.nn.Module) -> int:
    """Parameters outside ``nn.Embedding`` modules (word, position and token-type embeddings are
    look-ups, not products). A decoder tied to the word embeddings (an MLM head) is a product: add
    its ``vocab x hidden`` with ``extra_params`` of :func:`model_flops_per_token`."""
    embedded = {id(p) for mod in model.modules() if isinstance(mod, torch.nn.Embedding)
                for p in mod.parameters()}
    return sum(p.numel() for p in model.parameters() if id(p) not in embedded)


def model_flops_per_token(n_params: int, n_layers: int, hidden: int, seq_len: int,
                          training: bool = True, extra_params: int = 0) -> float:
    """Model FLOPs per token: ``6 N + 12 L H T`` for a training step, ``2 N + 4 L H T`` for a
    forward pass (Chowdhery et al., 2022, appendix B; N = ``n_params + extra_params``
    non-embedding parameters, L layers, H hidden size, T tokens per sequence)."""
    n = n_params + extra_params
    forward = 2 * n + 4 * n_layers * hidden * seq_len
    return 3.0 * forward if training else float(forward)


def mfu(tokens_per_second: float, flops_per_token: float, peak_gflops: float) -> float:
    """Model FLOPs utilisation: the share (0-1) of ``peak_gflops`` (GFLOP/s) that
    ``tokens_per_second`` x ``flops_per_token`` is."""
    return tokens_per_second * flops_per_token / (peak_gflops * 1e9)


def run(threads: int, repeat: int, seconds: float, shapes: list[str], log) -> dict:
    """Measure every shape in fp32 and bf16 ``repeat`` times, interleaved; log and return the
    medians and peaks."""
    torch.set_num_threads(threads)
    feats = cpu_features()
    log(f"cpu_peak: {feats['cpu']}; torch {feats['torch']} ({feats['torch_cpu_capability']}); "
        f"flags amx_bf16={feats['amx_bf16_flag']} avx512_bf16={feats['avx512_bf16_flag']} "
        f"avx512f={feats['avx512f_flag']}; torch AMX tiles usable={feats['torch_amx_tile']}")
    log(f"--precision auto here: {feats['auto_precision']}")
    log(f"threads {threads}, repeats {repeat}, >= {seconds} s a measurement; load {load1()}")
    out: dict = {"features": feats, "threads": threads, "rows": {}}
    for r in range(repeat):
        for shape in shapes:
            for side in side_order(tuple(DTYPES), r):
                before = load1()
                res = measure(SHAPES[shape], DTYPES[side], seconds, threads)
                note = shared_note(before, load1(), threads)
                out["rows"].setdefault(shape, {}).setdefault(side, []).append({**res, "load": note})
                log(f"  repeat {r + 1} {shape:30s} {side}: {res['gflops_wall']:8.1f} GFLOP/s wall, "
                    f"{res['gflops_cpu']:8.1f} CPU-time ({res['calls']} calls); {note}")
    log("")
    log(f"GFLOP/s, median (min-max) over {repeat} repeats; ratio = bf16 / fp32 medians")
    peaks = {side: {"wall": 0.0, "cpu": 0.0} for side in DTYPES}
    for shape in shapes:
        for kind in ("wall", "cpu"):
            meds = {}
            for side in DTYPES:
                vals = [m[f"gflops_{kind}"] for m in out["rows"][shape][side]]
                meds[side] = statistics.median(vals)
                peaks[side][kind] = max(peaks[side][kind], meds[side])
                log(f"  {shape:30s} {side} {kind:4s}: {spread(vals)}")
            log(f"  {shape:30s} bf16/fp32 {kind}: {meds['bf16'] / meds['fp32']:.2f}x")
    out["peak_gflops"] = peaks
    log("")
    for side in DTYPES:
        log(f"peak {side}: {peaks[side]['wall']:.1f} GFLOP/s wall, {peaks[side]['cpu']:.1f} "
            f"CPU-time (highest median over the shapes)")
    log(f"peak bf16 / peak fp32 (CPU-time): {peaks['bf16']['cpu'] / peaks['fp32']['cpu']:.2f}x")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.5, help="least time of one measurement")
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--log", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    log = logger(args.log or Path(f"benchmarks/results/cpu_peak/cpu_peak_{args.threads}thread.log"))
    out = run(args.threads, args.repeat, args.seconds, args.shapes, log)
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                         **out}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
