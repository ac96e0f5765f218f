"""The training loop shared by every task.

It knows no task: it receives a model whose ``forward(**batch)`` returns a dict with a scalar
``"loss"`` (and optionally loss components ``*_loss``, logged separately), a :class:`BatchSource`
and, optionally, an evaluation function run after each epoch or every N steps. Training runs for
a number of epochs or, with ``max_steps``, a number of optimiser steps.
Features: AdamW with linear warm-up/decay, gradient accumulation and clipping, bf16/fp16 autocast,
checkpoints every N steps and at each epoch end (atomic), exact resume (weights, optimiser,
scheduler, RNG, data position), best-epoch selection on dev, metrics.jsonl and a rich progress bar;
DDP or FSDP across processes (:mod:`~bertkit.training.distributed`,
:mod:`~bertkit.training.fsdp`), SIGINT/SIGTERM checkpoint-and-exit, non-finite loss handling.
"""

from __future__ import annotations

import json

import math
import time
from pathlib import Path
from typing import Any, Callable

import torch
from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.io import atomic_path
from bertkit.training.batches import BatchSource, TrainResult, batch_examples, plan_steps
from bertkit.training.checkpoint import list_checkpoints, load_checkpoint, save_checkpoint, set_rng_state
from bertkit.training.config import TrainConfig
from bertkit.training.devices import Runtime, is_main_process, seed_everything
from bertkit.training.distributed import (all_reduce_sum, barrier, broadcast_flag,
                                          global_loss_scale, init_distributed, is_distributed,
                                          shard_batch, wrap_model)
from bertkit.training.fsdp import (full_model_state, full_optimizer_state, load_full_state,
                                   shard_model)
from bertkit.training.logging import MetricsLog, make_progress
from bertkit.training.optim import build_optimizer, build_scheduler
from bertkit.training.rundir import check_free_space, checkpoint_bytes
from bertkit.training.signals import StopRequest


def train(
    model: torch.nn.Module,
    data: BatchSource,
    cfg: TrainConfig,
    runtime: Runtime,
    output_dir: Path,
    evaluate: Callable[[torch.nn.Module], dict[str, Any]] | None = None,
    select_metric: str | None = "f1",
    console: Console | None = None,
) -> TrainResult:
    """Train ``model`` on ``data`` for ``cfg.epochs`` epochs (or ``cfg.max_steps`` steps).

    Args:
        model: returns ``{"loss": scalar, ...}`` from ``model(**batch)``; further scalar entries
            named ``*_loss`` (e.g. ``mlm_loss``, ``sbo_loss``) are averaged and logged beside it.
        data: the training batches (see :class:`BatchSource`).
        cfg: loop settings; ``cfg.resume`` continues from the newest checkpoint in
            ``output_dir/checkpoints``.
        runtime: device and autocast dtype.
        output_dir: run directory; the loop writes ``metrics.jsonl`` and ``checkpoints/`` there.
        evaluate: called after each epoch (every ``cfg.eval_steps`` steps if set) with the model
            in eval mode, returns metrics. None: no evaluation.
        select_metric: keep the weights with the highest value of this metric (higher is
            better); None: keep the last weights.
        console: where the progress bar draws.

    Returns:
        a :class:`TrainResult`. On return, the model holds the best (or last) weights.

    Raises:
        BertkitError: ``cfg.resume`` with no checkpoint, bad settings, a non-finite loss, or
            running out of device memory (with a hint).
    """
    cfg.check_ranges()
    main = is_main_process()
    ckpt_dir = output_dir / "checkpoints"
    if main:
        output_dir.mkdir(parents=True, exist_ok=True)
    seed_everything(cfg.seed)
    init_distributed(runtime.device)
    sharded = cfg.fsdp and is_distributed()
    if not sharded:
        model.to(runtime.device)
    if main:
        check_free_space(output_dir, checkpoint_bytes(model))
    # the module that trains: a sharded copy (FSDP; ``model`` stays a plain CPU copy that rank 0
    # evaluates and saves), DDP around the model, or the model itself
    net = shard_model(model, runtime.device) if sharded else wrap_model(model, runtime.device)
    if sharded:
        model.to("cpu")  # the shards train; this full copy only receives gathered weights
    accum = cfg.gradient_accumulation
    n_epochs, total_steps = plan_steps(data, cfg)
    optimizer = build_optimizer(net if sharded else model, cfg.lr, cfg.weight_decay,
                                runtime.device, sharded=sharded)
    scheduler = build_scheduler(optimizer, cfg.warmup, total_steps)
    scaler = torch.amp.GradScaler(runtime.device.type, enabled=runtime.dtype == torch.float16)
    pos = {"step": 0, "epoch": 0, "batch": 0, "best_metric": None, "best_epoch": None,
           "best_index": None, "history": [], "train_seconds": 0.0, "train_examples": 0,
           "last_train": None}

    if cfg.resume:
        found = list_checkpoints(ckpt_dir)
        if not found:
            raise BertkitError("--resume given but the run has no checkpoint (it stopped before "
                               "its first one)", file=ckpt_dir,
                               expected="a checkpoints/step_N folder from an earlier run; to "
                                        "start this run again: --overwrite instead of --resume")
        saved = load_checkpoint(found[-1], model)
        if sharded:
            load_full_state(net, optimizer, model.state_dict(), saved["optimizer"])
        else:
            optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        scaler.load_state_dict(saved["scaler"])
        pos = {"last_train": None, "best_index": None, **saved["position"]}
        set_rng_state(saved["rng"])
    if main:  # after a resume's checkpoint is found: a failed resume records nothing
        _write_environment(output_dir / "environment.json", runtime, cfg)
    log = MetricsLog(output_dir / "metrics.jsonl" if main else None,
                     keep_until_step=pos["step"] if cfg.resume else None,
                     tensorboard=cfg.report_to == "tensorboard")

    def checkpoint() -> None:
        """Rank 0 writes the step checkpoint (under FSDP every rank helps gather it first)."""
        if sharded:
            model_state, optim_state = full_model_state(net), full_optimizer_state(net, optimizer)
        elif main:
            model_state, optim_state = model.state_dict(), optimizer.state_dict()
        if main:
            save_checkpoint(ckpt_dir, pos["step"], model_state, {
                "optimizer": optim_state, "scheduler": scheduler.state_dict(),
                "scaler": scaler.state_dict(), "position": pos}, keep=cfg.save_total_limit)

    def sync_model() -> None:
        """Under FSDP, gather the trained weights into rank 0's plain ``model`` (collective)."""
        if sharded:
            state = full_model_state(net)
            if main:
                model.load_state_dict(state)

    window: dict[str, float] = {}
    counts = {"batches": 0, "examples": 0, "tokens": 0}
    clock = {"window": time.perf_counter(), "train": time.perf_counter()}

    def flush(epoch: int) -> dict[str, Any]:
        """Log the mean losses and throughput of the steps since the last record."""
        elapsed = max(time.perf_counter() - clock["window"], 1e-9)
        record = {"type": "train", "step": pos["step"], "epoch": epoch + 1,
                  **{k: v / counts["batches"] for k, v in window.items()},
                  "lr": scheduler.get_last_lr()[0], "examples_per_s": counts["examples"] / elapsed,
                  "tokens_per_s": counts["tokens"] / elapsed}
        log.log(record)
        pos["last_train"] = record
        window.clear()
        counts.update(batches=0, examples=0, tokens=0)
        clock["window"] = time.perf_counter()
        return record

    def run_eval(epoch: int) -> None:
        pos["train_seconds"] += time.perf_counter() - clock["train"]
        sync_model()
        if not main:  # rank 0 evaluates and selects; the others wait for it
            barrier()
            clock["train"] = clock["window"] = time.perf_counter()
            return
        model.to(runtime.device)
        model.eval()
        with torch.no_grad():
            metrics = evaluate(model)
        if sharded:  # rank 0's full copy leaves the device while the shards train
            model.to("cpu")
        net.train()
        record = {"type": "eval", "split": "dev", "step": pos["step"], "epoch": epoch + 1,
                  **{k: v for k, v in metrics.items() if isinstance(v, (int, float))}}
        log.log(record)
        pos["history"].append(record)
        if select_metric is not None:
            score = float(metrics[select_metric])
            if pos["best_metric"] is None or score > pos["best_metric"]:
                pos["best_metric"], pos["best_epoch"] = score, epoch + 1
                pos["best_index"] = len(pos["history"]) - 1
                if main:
                    with atomic_path(ckpt_dir / "best.pt") as tmp:
                        torch.save(model.state_dict(), tmp)
            if console is not None and main:
                best = pos["history"][pos["best_index"]] if pos["best_index"] is not None else {}
                where, best_at = ((f"step {pos['step']}/{total_steps}",
                                   f"step {best.get('step', '?')}")
                                  if cfg.eval_steps else
                                  (f"epoch {epoch + 1}/{n_epochs}", f"epoch {pos['best_epoch']}"))
                console.print(f"{where}: dev {select_metric} {score:.4f} "
                              f"(best {pos['best_metric']:.4f}, {best_at})")
        elif console is not None and main:
            shown = ", ".join(f"{k} {v:.4f}" for k, v in record.items()
                              if isinstance(v, float) and k != "time_s")
            console.print(f"step {pos['step']}/{total_steps}: dev {shown}", highlight=False)
        barrier()
        clock["train"] = clock["window"] = time.perf_counter()

    def stop_now(signal_name: str | None) -> None:
        """Save a checkpoint at this step and end the run (SIGINT/SIGTERM)."""
        pos["train_seconds"] += time.perf_counter() - clock["train"]
        if counts["batches"]:
            flush(pos["epoch"])
        checkpoint()
        log.close()
        raise BertkitError(
            f"stopped by {signal_name or 'a signal to another process'} at step {pos['step']}; "
            f"checkpoint saved in {ckpt_dir}",
            expected=f"--resume --output-dir {output_dir} to continue",
            exit_code=143 if signal_name == "SIGTERM" else 130)

    device = runtime.device
    skipped = 0
    progress = make_progress(console, disable=not main or console is None)
    with progress, StopRequest() as stop:
        bar = progress.add_task("train", total=total_steps, completed=pos["step"], rate="")
        for epoch in range(pos["epoch"], n_epochs):
            if pos["step"] >= total_steps:
                break
            net.train()
            n_batches = data.num_batches(epoch)
            clock["train"] = clock["window"] = time.perf_counter()
            for i, batch in enumerate(data.iter_batches(epoch, pos["batch"]), start=pos["batch"]):
                examples, tokens = batch_examples(batch)
                batch = runtime.to_device(shard_batch(batch, examples))
                try:
                    with runtime.autocast():
                        out = net(**batch)
                    loss = out["loss"]
                    scale = 1.0
                    if is_distributed():  # weight each rank by its share of the loss targets
                        local = out.get("loss_count")
                        scale = global_loss_scale(float(local) if local is not None
                                                  else batch_examples(batch)[0], device)
                    scaler.scale(loss * scale / accum).backward()
                except torch.OutOfMemoryError:
                    raise BertkitError(
                        f"out of device memory with batch size {cfg.batch_size}",
                        expected="a smaller --batch-size with --gradient-accumulation to keep "
                                 "the effective batch") from None
                parts = {"loss": loss.detach().float()}
                parts.update((k, v.detach().float()) for k, v in out.items()
                             if k.endswith("_loss") and torch.is_tensor(v) and v.ndim == 0)
                values = torch.stack(list(parts.values()))
                if is_distributed():  # the global means (each rank's share, summed)
                    values = all_reduce_sum(values * scale) / torch_world_size()
                values = values.tolist()
                if not all(math.isfinite(v) for v in values):  # (all-reduced: on every rank)
                    where = (data.describe(epoch, i) if hasattr(data, "describe")
                             else f"batch {i + 1} of epoch {epoch + 1}")
                    skipped += 1
                    if skipped > cfg.skip_nonfinite:
                        log.close()
                        raise BertkitError(
                            f"non-finite training loss ({values[0]}) at step {pos['step'] + 1}, "
                            f"epoch {epoch + 1}, on {where}",
                            expected="a lower --lr, "
                                     + ("--precision fp32, " if runtime.dtype is not None
                                        else "") + "or --skip-nonfinite N to skip up to N such "
                                     "batches")
                    log.log({"type": "skipped_batch", "step": pos["step"], "epoch": epoch + 1,
                             "batch": i, "source": where, "loss": str(values[0])})
                    if console is not None and main:
                        console.print(f"[yellow]warning:[/] non-finite loss on {where}: batch "
                                      f"skipped ({skipped}/{cfg.skip_nonfinite})", highlight=False)
                    optimizer.zero_grad(set_to_none=True)
                    continue
                for key, v in zip(parts, values):
                    window[key] = window.get(key, 0.0) + v
                counts["batches"] += 1
                counts["examples"] += examples
                counts["tokens"] += tokens
                pos["train_examples"] += examples
                if (i + 1) % accum and i + 1 != n_batches:
                    continue
                if cfg.max_grad_norm > 0:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                pos["step"] += 1
                pos["batch"] = i + 1
                elapsed = time.perf_counter() - clock["window"]
                rate = counts["examples"] / max(elapsed, 1e-9)
                progress.update(bar, advance=1, rate=f"{rate:.1f} ex/s")
                last = pos["step"] >= total_steps
                if pos["step"] % cfg.logging_steps == 0:
                    flush(epoch)
                if evaluate is not None and cfg.eval_steps and (
                        pos["step"] % cfg.eval_steps == 0 or last):
                    if counts["batches"]:
                        flush(epoch)
                    run_eval(epoch)
                if cfg.save_steps and pos["step"] % cfg.save_steps == 0 and not last:
                    pos["train_seconds"] += time.perf_counter() - clock["train"]
                    clock["train"] = time.perf_counter()
                    checkpoint()
                if broadcast_flag(stop.requested, device):
                    stop_now(stop.signal_name)
                if last:
                    break
            pos["train_seconds"] += time.perf_counter() - clock["train"]
            clock["train"] = time.perf_counter()  # counted: evaluation must not count it again
            if counts["batches"]:  # the epoch's last steps, so short runs log a loss too
                flush(epoch)
            pos["epoch"], pos["batch"] = epoch + 1, 0
            if evaluate is not None and not cfg.eval_steps:
                run_eval(epoch)
            checkpoint()
            if broadcast_flag(stop.requested, device):  # e.g. Ctrl-C during the evaluation
                stop_now(stop.signal_name)
    log.close()
    sync_model()
    if main:
        model.to(runtime.device)
        _draw_curves(output_dir, console)
    if main and evaluate is not None and select_metric is not None and (
            ckpt_dir / "best.pt").is_file():
        model.load_state_dict(torch.load(ckpt_dir / "best.pt", map_location=runtime.device,
                                         weights_only=True))
    model.eval()
    return TrainResult(steps=pos["step"], history=pos["history"], best_epoch=pos["best_epoch"],
                       best_index=pos.get("best_index"),
                       best_metric=pos["best_metric"], train_seconds=pos["train_seconds"],
                       train_examples=pos["train_examples"], last_train=pos.get("last_train"))


def torch_world_size() -> int:
    """Processes in this run (1 without ``torch.distributed``)."""
    from bertkit.training.devices import world_size

    return world_size()


def _draw_curves(output_dir: Path, console: Console | None) -> None:
    """Write ``curves.png`` (loss and evaluation curves); a plotting failure never fails a run."""
    try:
        from bertkit.plots import plot_run

        plot_run(output_dir)
    except Exception as exc:  # noqa: BLE001 - a missing font or backend must not cost the run
        if console is not None:
            console.print(f"[yellow]warning:[/] could not draw curves.png: {exc}", highlight=False)


def _write_environment(env_file: Path, runtime: Runtime, cfg: TrainConfig) -> None:
    """Write ``environment.json``; on ``--resume`` keep the original start and list each resume."""
    from bertkit.io import write_json
    from bertkit.provenance import run_environment

    env = run_environment(runtime.device, cfg.seed, torch_world_size())
    if cfg.resume and env_file.is_file():
        try:
            first = json.loads(env_file.read_text(encoding="utf-8"))
            env = {**first, "resumed": [*first.get("resumed", []), env]}
        except (OSError, ValueError, AttributeError):
            pass
    write_json(env_file, env)
