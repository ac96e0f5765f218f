"""Where the time of a MiniLM NER training step goes, in fp32 and in bf16 autocast (torch.profiler).

The step is bertkit's own (:func:`bertkit.training.loop.forward_backward` then
:func:`~bertkit.training.loop.optimizer_step`: forward with the CRF loss, backward, gradient
clipping, AdamW, schedule) on the batches the ``bc5cdr-ner-minilm`` recipe trains on (32
sentences, length-grouped, CRF; the packaged MiniLM-L6-H384 encoder), prepared by the NER task as
``bertkit finetune ner --recipe bc5cdr-ner-minilm`` prepares them. Sides (``--sides``):
``fp32-forloop`` (fp32 with torch's for-loop AdamW: bertkit's CPU step before the fused AdamW),
``fp32`` and ``bf16`` (autocast), both with the fused AdamW that bertkit now uses on CPUs. Every
side starts from the same initial weights and runs the same batches of epoch 1.

Timing: one untimed warm-up step per side, then ``--repeat`` rounds; each round runs ``--steps``
steps of every side (the sides in order on even rounds, reversed on odd ones;
benchmarks/_interleave.py), timing each step as wall-clock and process CPU time / threads, with
the 1-minute load average before and after. Figures: median (min-max) over all timed steps. MFU:
model FLOPs of the step (6 N + 12 L H T per token over the batch's real, non-padding tokens,
benchmarks/cpu_peak.py) over the CPU-time peak of ``--peak-json`` (a ``cpu_peak.py --json``
file of the same thread count) when given, and over the peak measured in this run: before each
side's steps in every round, ``F.linear`` on MiniLM's feed-forward shape in that precision
(0.5 s; cpu_peak.py's measurement), so the step and its reference see the same machine load.

Profile: one further step per side under ``torch.profiler`` (CPU activities); the top
``--top`` operators by self CPU time are printed with their share of the step.

Usage:
    BERTKIT_DATA=../shared/data OMP_NUM_THREADS=1 python benchmarks/profile_step.py --threads 1 \\
        [--steps 2] [--repeat 2] [--sides fp32-forloop fp32 bf16] [--peak-json OUT] [--log LOG]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interleave import load1, logger, shared_note, side_order, spread  # noqa: E402
from cpu_peak import (DTYPES, SHAPES, measure, mfu, model_flops_per_token,  # noqa: E402
                      non_embedding_parameters)

PEAK_SHAPE = "MiniLM FFN 4096x384->1536"


def prepare(max_train: int | None):
    """The NER task's model and training batches for the bc5cdr-ner-minilm recipe."""
    from bertkit.settings.layers import build_config
    from bertkit.encoders import default_model, resolve_model_source
    from bertkit.workflows.recipes import load_recipe
    from bertkit.tasks.driver import load_splits
    from bertkit.tasks.ner import NERConfig
    from bertkit.tasks.registry import get_task
    from bertkit.training.devices import make_runtime, seed_everything

    task = get_task("ner")
    cfg = build_config(NERConfig, load_recipe("bc5cdr-ner-minilm", "finetune ner"),
                       {"max_train_samples": max_train, "device": "cpu"}, source="profile")
    model_name = resolve_model_source(default_model())
    data = load_splits(task, cfg, None)
    seed_everything(cfg.seed)
    prepared = task.prepare(cfg, model_name, data, make_runtime("cpu", "fp32"), None)
    return cfg, prepared


def make_parts(model, batches, cfg, side: str, out: Path):
    """The training loop's parts (optimiser, schedule, scaler) for ``model`` as ``side`` says:
    ``fp32`` or ``bf16`` (autocast), ``-forloop`` appended: torch's for-loop AdamW instead of
    bertkit's fused one (the CPU default before, for the before/after comparison)."""
    from bertkit.training.devices import make_runtime
    from bertkit.training.loop import setup
    from bertkit.training.rundir import RunWriter

    precision, _, variant = side.partition("-")
    parts = setup(model, batches, cfg, make_runtime("cpu", precision), RunWriter(out), None)
    if variant == "forloop":
        for group in parts.optimizer.param_groups:  # AdamW.step reads these per group
            group["fused"], group["foreach"] = False, False
    elif variant:
        raise SystemExit(f"error: unknown side {side!r} (expected fp32, bf16, fp32-forloop, ...)")
    return parts


def step(parts, batch) -> None:
    """One training step of bertkit's loop on ``batch``."""
    from bertkit.training.loop import forward_backward, optimizer_step

    forward_backward(parts, batch)
    optimizer_step(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2, help="timed steps per side and round")
    ap.add_argument("--repeat", type=int, default=2, help="rounds")
    ap.add_argument("--sides", nargs="+", default=["fp32-forloop", "fp32", "bf16"],
                    help="fp32 or bf16, -forloop: with the for-loop AdamW (before)")
    ap.add_argument("--max-train-samples", type=int, default=2000)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--peak-json", type=Path, default=None)
    ap.add_argument("--log", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    log = logger(args.log or Path(f"benchmarks/results/cpu_peak/profile_step_{args.threads}thread.log"))
    from bertkit.encoders import quiet_transformers

    quiet_transformers()
    cfg, prepared = prepare(args.max_train_samples)
    batches = prepared.batches
    wanted = args.steps * args.repeat + 2  # + warm-up and profiled step
    plan = [b for _, b in zip(range(wanted), batches.iter_batches(0, 0))]
    if len(plan) < wanted:
        raise SystemExit(f"error: only {len(plan)} batches; lower --steps/--repeat")
    enc = prepared.model.encoder.config
    n_params = non_embedding_parameters(prepared.model)
    shapes = [tuple(b["input_ids"].shape) for b in plan]
    log(f"profile_step: NER MiniLM (bc5cdr-ner-minilm recipe: batch {cfg.batch_size}, CRF "
        f"{cfg.crf}), {n_params:,} non-embedding parameters, {enc.num_hidden_layers} layers x "
        f"{enc.hidden_size}; threads {args.threads}; torch {torch.__version__}")
    log(f"batch shapes (sentences x padded pieces): {shapes}")
    peak = None
    if args.peak_json:
        peak = json.loads(args.peak_json.read_text(encoding="utf-8"))["peak_gflops"]
    init = copy.deepcopy(prepared.model.state_dict())
    tmp = Path(tempfile.mkdtemp(prefix="bertkit-profile-"))
    parts = {}
    for p in args.sides:
        model = prepared.model if p == args.sides[0] else copy.deepcopy(prepared.model)
        model.load_state_dict(init)
        parts[p] = make_parts(model, batches, cfg, p, tmp / p)
        step(parts[p], plan[0])  # warm-up
    times = {p: {"wall": [], "cpu": [], "load": []} for p in args.sides}
    peaks = {p: {"wall": [], "cpu": []} for p in ("fp32", "bf16")}
    for r in range(args.repeat):
        for p in side_order(tuple(args.sides), r):
            prec = p.partition("-")[0]
            got = measure(SHAPES[PEAK_SHAPE], DTYPES[prec], 0.5, args.threads)  # same run's peak
            peaks[prec]["wall"].append(got["gflops_wall"])
            peaks[prec]["cpu"].append(got["gflops_cpu"])
            log(f"  round {r + 1} {p} matmul peak ({PEAK_SHAPE}): {got['gflops_wall']:.1f} "
                f"GFLOP/s wall, {got['gflops_cpu']:.1f} CPU-time")
            for batch in plan[1 + r * args.steps: 1 + (r + 1) * args.steps]:
                before = load1()
                w0, c0 = time.perf_counter(), time.process_time()
                step(parts[p], batch)
                wall, cpu = time.perf_counter() - w0, (time.process_time() - c0) / args.threads
                note = shared_note(before, load1(), args.threads)
                times[p]["wall"].append(wall)
                times[p]["cpu"].append(cpu)
                log(f"  round {r + 1} {p} batch {tuple(batch['input_ids'].shape)}: "
                    f"{wall:.2f} s wall, {cpu:.2f} s CPU; {note}")
    timed = plan[1:1 + args.steps * args.repeat]
    tokens = statistics.mean(int(b["attention_mask"].sum()) for b in timed)
    seq = statistics.mean(b["input_ids"].shape[1] for b in timed)
    flops = model_flops_per_token(n_params, enc.num_hidden_layers, enc.hidden_size, round(seq))
    log("")
    log(f"step time, median (min-max) over {args.steps * args.repeat} steps; "
        f"{tokens:.0f} real (non-padding) tokens a step on average, the model FLOPs counted on "
        f"them (training packs rows: little padding work); {flops / 1e6:.1f} MFLOP a token")
    for p in args.sides:
        for kind in ("wall", "cpu"):
            log(f"  {p} {kind:4s}: {spread(times[p][kind])} s")
        for kind in ("wall", "cpu"):
            med = statistics.median(times[p][kind])
            model = tokens * flops / med / 1e9
            line = (f"  {p} {kind:4s}: {tokens / med:.0f} tokens/s, {model:.1f} GFLOP/s model; MFU "
                    + ", ".join(f"{100 * mfu(tokens / med, flops, statistics.median(peaks[ref][kind])):.1f}% "
                                f"of the {ref} matmul peak" for ref in peaks if peaks[ref][kind]))
            if peak:
                line += "".join(f"; {100 * mfu(tokens / med, flops, peak[ref][kind]):.1f}% of "
                                f"--peak-json {ref}" for ref in peak)
            log(line)
    for p in [p for p in peaks if peaks[p]["cpu"]]:
        log(f"  {p} matmul peak ({PEAK_SHAPE}) in this run: wall {spread(peaks[p]['wall'])}, "
            f"CPU-time {spread(peaks[p]['cpu'])} GFLOP/s")
    first = args.sides[0]
    for p in args.sides[1:]:
        log(f"  {p} / {first} step time, medians: CPU "
            f"{statistics.median(times[p]['cpu']) / statistics.median(times[first]['cpu']):.2f}, wall "
            f"{statistics.median(times[p]['wall']) / statistics.median(times[first]['wall']):.2f}")
    if args.no_profile:
        return
    from torch.profiler import ProfilerActivity, profile

    for p in args.sides:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step(parts[p], plan[-1])
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        log("")
        log(f"{p}: top {args.top} operators by self CPU time (one step, batch "
            f"{tuple(plan[-1]['input_ids'].shape)}; {total / 1e6:.2f} s profiled)")
        for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:args.top]:
            log(f"  {e.key:45s} {e.self_cpu_time_total / 1e3:9.1f} ms {100 * e.self_cpu_time_total / total:5.1f}%  "
                f"calls {e.count}")


if __name__ == "__main__":
    main()
