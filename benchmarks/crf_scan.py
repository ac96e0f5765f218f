"""The CRF's log-partition on this CPU: the loop over words (bertkit before issue 61) against the
parallel scan in log space (``bertkit.heads.crf.log_partition``), and Viterbi decoding likewise.

Measured: forward + backward of the CRF loss (``LinearChainCRF.forward(...).backward()``), and
``decode`` (no gradient), on random emissions ``[B, W, C]`` with C = 5 (IOB2 with 2 types, as
BC5CDR), B = 32 rows of lengths drawn uniformly from 1..W with one row of the full width W. The
loop side is the code of ``--old`` (default main 2abed2c, before the scan), read with ``git show``
from this checkout's history, so it is the code that ran, not a copy. The sides alternate within
each repeat (benchmarks/_interleave.py); a figure is the median (min-max) of ``--repeats`` timed
calls after ``--warmup`` untimed ones, in wall-clock milliseconds and, beside them, process CPU
milliseconds (with one thread the work done, less sensitive to other jobs on a shared machine);
``--threads`` torch threads; the 1-minute load average is recorded before and after each width.

The scan does O(W C^3) work per row against the loop's O(W C^2) (a ``C x C`` log-semiring matrix
product per tree node) in log2(W) batched steps instead of W-1: on a CPU, where the loop's steps
cost little each, it can be slower; its point is the GPU, where each of the loop's steps is a few
kernel launches and their autograd mirror (issue 61).

Usage:
    OMP_NUM_THREADS=1 python benchmarks/crf_scan.py --widths 32 72 128 --repeats 80 \\
        --json benchmarks/results/crf_scan/crf_scan.json \\
        --log benchmarks/results/crf_scan/crf_scan.log
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _interleave import load1, load_average, logger, shared_note, side_order, spread  # noqa: E402

LABELS = ["B-Chem", "B-Dis", "I-Chem", "I-Dis", "O"]


def old_module(commit: str, path: str, name: str) -> types.ModuleType:
    """The module ``path`` as it was at ``commit`` of this checkout (``git show``), imported."""
    source = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=HERE.parent, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType(name)
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
    return module


def case(torch, B: int, W: int, C: int, seed: int):
    """Random emissions ``[B, W, C]``, tags ``[B, W]`` and a prefix mask with one full row."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, W + 1, (B,), generator=g)
    lengths[0] = W
    mask = torch.arange(W).unsqueeze(0) < lengths.unsqueeze(1)
    return (torch.randn(B, W, C, generator=g), torch.randint(0, C, (B, W), generator=g), mask)


def timed(fn) -> tuple[float, float]:
    """Wall-clock and process CPU milliseconds of one call of ``fn``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def ner_check(sentences: int, old_crf, old_viterbi, work: Path, log) -> dict:
    """The same small BC5CDR CRF fine-tuning (first ``sentences`` training sentences, 1 epoch,
    batch 16, lr 2e-4, the packaged MiniLM, fp32) with the loop CRF and decoder, then with the scan:
    the logged training loss, dev and test F1 and training seconds of each."""
    from bertkit.heads.crf import LinearChainCRF
    from bertkit.tasks.ner import NERConfig, finetune_ner

    new = (LinearChainCRF.forward, LinearChainCRF.decode)

    def old_decode(self, emissions, mask):
        return old_viterbi.viterbi_decode(emissions, mask, *self.scores())
    out = {}
    for side in ("loop", "scan"):
        LinearChainCRF.forward, LinearChainCRF.decode = (
            (old_crf.LinearChainCRF.forward, old_decode) if side == "loop" else new)
        try:
            finetune_ner(NERConfig(data="bc5cdr", crf=True, epochs=1, batch_size=16, lr=2e-4,
                                   max_train_samples=sentences, max_eval_samples=200,
                                   precision="fp32", device="cpu", output_dir=str(work / side),
                                   overwrite=True))
        finally:
            LinearChainCRF.forward, LinearChainCRF.decode = new
        results = json.loads((work / side / "results.json").read_text(encoding="utf-8"))
        train = [json.loads(x) for x in (work / side / "metrics.jsonl").read_text(
            encoding="utf-8").splitlines() if '"train"' in x][-1]
        out[side] = {"train_loss": train["loss"], "dev_f1": results["dev"]["f1"],
                     "test_f1": results["test"]["f1"],
                     "train_seconds": results["dev"].get("train_seconds")}
        log(f"NER {side}: train loss {train['loss']:.7f}, dev F1 {results['dev']['f1']:.4f}, "
            f"test F1 {results['test']['f1']:.4f}, {out[side]['train_seconds']} s training")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[32, 72, 128])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=80, help="timed calls per side, width, kind")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--old", default="2abed2c", help="commit whose loop CRF is the baseline")
    ap.add_argument("--ner-sentences", type=int, default=0,
                    help="also fine-tune BC5CDR NER with a CRF on this many training sentences, "
                         "loop then scan (0: skip; needs BERTKIT_DATA)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/crf_scan"),
                    help="run folders of the NER check")
    ap.add_argument("--json", type=Path, default=HERE / "results/crf_scan/crf_scan.json")
    ap.add_argument("--log", type=Path, default=HERE / "results/crf_scan/crf_scan.log")
    args = ap.parse_args()

    import torch

    from bertkit.heads.crf import LinearChainCRF
    torch.set_num_threads(args.threads)
    log = logger(args.log)
    old_crf = old_module(args.old, "bertkit/heads/crf.py", "old_crf")
    old_viterbi = old_module(args.old, "bertkit/decoding/viterbi.py", "old_viterbi")
    torch.manual_seed(0)
    scan = LinearChainCRF(LABELS)
    with torch.no_grad():
        for p in scan.parameters():
            p.normal_()
    loop = old_crf.LinearChainCRF(LABELS)
    loop.load_state_dict(scan.state_dict())
    cpu = next((x.split(":", 1)[1].strip() for x in Path("/proc/cpuinfo").read_text().splitlines()
                if x.startswith("model name")), platform.processor())
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    cpu += " (AVX512-BF16)" if "avx512_bf16" in flags else ""
    log(f"CPU: {cpu}; torch {torch.__version__}; {args.threads} thread(s); batch {args.batch}, "
        f"C = {len(LABELS)}; loop = {args.old}:bertkit/heads/crf.py; {load_average()}")
    sides = {
        "loop": (loop, lambda e, m: old_viterbi.viterbi_decode(e, m, *scan.scores())),
        "scan": (scan, lambda e, m: scan.decode(e, m)),
    }
    results = {}
    for W in args.widths:
        em, tags, mask = case(torch, args.batch, W, len(LABELS), seed=W)
        before = load1()
        times = {f"{side}_{kind}": [] for side in sides for kind in ("loss_fwd_bwd", "decode")}
        cpu_times = {k: [] for k in times}
        for r in range(args.warmup + args.repeats):
            for side in side_order(tuple(sides), r):
                crf, decode = sides[side]

                def step(crf=crf):
                    e = em.clone().requires_grad_(True)
                    crf.zero_grad()
                    crf(e, tags, mask).backward()

                def dec(decode=decode):
                    with torch.no_grad():
                        decode(em, mask)
                for kind, fn in (("loss_fwd_bwd", step), ("decode", dec)):
                    wall, cpu_ms = timed(fn)
                    if r >= args.warmup:
                        times[f"{side}_{kind}"].append(wall)
                        cpu_times[f"{side}_{kind}"].append(cpu_ms)
        after = load1()
        with torch.no_grad():
            same = torch.equal(sides["loop"][1](em, mask), sides["scan"][1](em, mask))
            gold_o = torch.full_like(tags, LABELS.index("O"))  # same gold score: the gap is log Z's
            gap = float((loop(em, gold_o, mask) - scan(em, gold_o, mask)).abs()) / args.batch
        entry = {k: {"median_ms": round(statistics.median(v), 3), "min_ms": round(min(v), 3),
                     "max_ms": round(max(v), 3),
                     "cpu_median_ms": round(statistics.median(cpu_times[k]), 3)}
                 for k, v in times.items()}
        for kind in ("loss_fwd_bwd", "decode"):
            for unit in ("median_ms", "cpu_median_ms"):
                entry[f"{kind}_speedup" + ("_cpu" if unit.startswith("cpu") else "")] = round(
                    entry[f"loop_{kind}"][unit] / entry[f"scan_{kind}"][unit], 3)
        entry.update(load_before=before, load_after=after, same_decode=same,
                     log_z_abs_gap_per_row=gap)
        results[str(W)] = entry
        log(f"W = {W:3d} ({shared_note(before, after, args.threads)}); same decoding: {same}; "
            f"|log Z loop - log Z scan| {gap:.1e} nats a row (float32)")
        for k, v in times.items():
            log(f"  {k:18s} wall ms {spread(v)}; CPU ms {spread(cpu_times[k])}")
        log(f"  scan speed-up (loop / scan, medians): loss fwd+bwd "
            f"{entry['loss_fwd_bwd_speedup']:.2f}x wall, {entry['loss_fwd_bwd_speedup_cpu']:.2f}x "
            f"CPU; decode {entry['decode_speedup']:.2f}x wall, "
            f"{entry['decode_speedup_cpu']:.2f}x CPU")
    ner = ner_check(args.ner_sentences, old_crf, old_viterbi, args.work, log) \
        if args.ner_sentences else None
    args.json.parent.mkdir(parents=True, exist_ok=True)

    def shown(v):  # a path inside the checkout as relative to it (no machine's folders in results)
        if not isinstance(v, Path):
            return v
        v = v.resolve()
        return str(v.relative_to(HERE.parent)) if v.is_relative_to(HERE.parent) else str(v)
    out = {"args": {k: shown(v) for k, v in vars(args).items()},
           "cpu": cpu, "torch": torch.__version__, "labels": LABELS, "results": results,
           "ner": ner}
    tmp = args.json.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    tmp.replace(args.json)


if __name__ == "__main__":
    main()
