"""The training loop shared by every task.

It knows no task: it receives a model whose ``forward(**batch)`` returns a dict with a scalar
``"loss"``, a :class:`BatchSource` and, optionally, an evaluation function run after each epoch.
Features: AdamW with linear warm-up/decay, gradient accumulation and clipping, bf16/fp16 autocast,
checkpoints every N steps and at each epoch end (atomic), exact resume (weights, optimiser,
scheduler, RNG, data position), best-epoch selection on dev, metrics.jsonl and a rich progress bar.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import torch
from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.io import atomic_path
from bertkit.training.checkpoint import list_checkpoints, load_checkpoint, save_checkpoint, set_rng_state
from bertkit.training.config import TrainConfig
from bertkit.training.devices import Runtime, is_main_process, seed_everything
from bertkit.training.logging import MetricsLog, make_progress
from bertkit.training.optim import build_optimizer, build_scheduler


class BatchSource(Protocol):
    """Training batches for the loop. The order of epoch ``e`` must depend only on (seed, e), so
    that resuming at batch ``k`` of an epoch replays exactly the batches an uninterrupted run saw."""

    def num_batches(self, epoch: int) -> int:
        """Number of batches in ``epoch``."""

    def iter_batches(self, epoch: int, start: int = 0) -> Iterator[dict[str, torch.Tensor]]:
        """Batches ``start, start+1, ...`` of ``epoch``: dicts of CPU tensors, ``[B, T]`` first."""


@dataclass
class TrainResult:
    """What a training run produced: optimiser steps, per-epoch dev metrics, the best epoch."""

    steps: int
    history: list[dict[str, Any]] = field(default_factory=list)
    best_epoch: int | None = None
    best_metric: float | None = None
    train_seconds: float = 0.0
    train_examples: int = 0


def _batch_examples(batch: dict[str, torch.Tensor]) -> tuple[int, int]:
    """(examples, real tokens) of a batch, for throughput."""
    mask = batch.get("attention_mask")
    first = next(v for v in batch.values() if torch.is_tensor(v))
    return int(first.shape[0]), int(mask.sum()) if mask is not None else int(first.numel())


def train(
    model: torch.nn.Module,
    data: BatchSource,
    cfg: TrainConfig,
    runtime: Runtime,
    output_dir: Path,
    evaluate: Callable[[torch.nn.Module], dict[str, Any]] | None = None,
    select_metric: str = "f1",
    console: Console | None = None,
) -> TrainResult:
    """Train ``model`` on ``data`` for ``cfg.epochs`` epochs; keep the best epoch on dev.

    Args:
        model: returns ``{"loss": scalar, ...}`` from ``model(**batch)``.
        data: the training batches (see :class:`BatchSource`).
        cfg: loop settings; ``cfg.resume`` continues from the newest checkpoint in
            ``output_dir/checkpoints``.
        runtime: device and autocast dtype.
        output_dir: run directory; the loop writes ``metrics.jsonl`` and ``checkpoints/`` there.
        evaluate: called after each epoch with the model (in eval mode), returns metrics; higher
            ``select_metric`` is better. None: the last epoch is kept.
        console: where the progress bar draws.

    Returns:
        a :class:`TrainResult`. On return, the model holds the best epoch's weights.

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
    model.to(runtime.device)
    accum = cfg.gradient_accumulation
    steps_per_epoch = [math.ceil(data.num_batches(e) / accum) for e in range(cfg.epochs)]
    total_steps = sum(steps_per_epoch)
    optimizer = build_optimizer(model, cfg.lr, cfg.weight_decay, runtime.device)
    scheduler = build_scheduler(optimizer, cfg.warmup, total_steps)
    scaler = torch.amp.GradScaler(runtime.device.type, enabled=runtime.dtype == torch.float16)
    pos = {"step": 0, "epoch": 0, "batch": 0, "best_metric": None, "best_epoch": None,
           "history": [], "train_seconds": 0.0, "train_examples": 0}

    if cfg.resume:
        found = list_checkpoints(ckpt_dir)
        if not found:
            raise BertkitError("--resume given but the run has no checkpoint", file=ckpt_dir,
                               expected="a checkpoints/step_N folder from an earlier run")
        saved = load_checkpoint(found[-1], model)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        scaler.load_state_dict(saved["scaler"])
        pos = saved["position"]
        set_rng_state(saved["rng"])
    log = MetricsLog(output_dir / "metrics.jsonl" if main else None,
                     keep_until_step=pos["step"] if cfg.resume else None)

    def checkpoint() -> None:
        if main:
            save_checkpoint(ckpt_dir, pos["step"], model, {
                "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "scaler": scaler.state_dict(), "position": pos}, keep=cfg.save_total_limit)

    progress = make_progress(console, disable=not main or console is None)
    window_loss, window_batches, window_examples, window_tokens = 0.0, 0, 0, 0
    window_start = time.perf_counter()
    with progress:
        bar = progress.add_task("train", total=total_steps, completed=pos["step"], rate="")
        for epoch in range(pos["epoch"], cfg.epochs):
            model.train()
            n_batches = data.num_batches(epoch)
            epoch_start = window_start = time.perf_counter()
            for i, batch in enumerate(data.iter_batches(epoch, pos["batch"]), start=pos["batch"]):
                examples, tokens = _batch_examples(batch)
                batch = runtime.to_device(batch)
                try:
                    with runtime.autocast():
                        loss = model(**batch)["loss"]
                    scaler.scale(loss / accum).backward()
                except torch.OutOfMemoryError:
                    raise BertkitError(
                        f"out of device memory with batch size {cfg.batch_size}",
                        expected="a smaller --batch-size with --gradient-accumulation to keep "
                                 "the effective batch") from None
                value = float(loss.detach())
                if not math.isfinite(value):
                    raise BertkitError(f"non-finite training loss ({value}) at step {pos['step']}, "
                                       f"epoch {epoch + 1}, batch {i}",
                                       expected="a lower --lr or --precision fp32")
                window_loss += value
                window_batches += 1
                window_examples += examples
                window_tokens += tokens
                pos["train_examples"] += examples
                if (i + 1) % accum and i + 1 != n_batches:
                    continue
                if cfg.max_grad_norm > 0:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                pos["step"] += 1
                pos["batch"] = i + 1
                elapsed = time.perf_counter() - window_start
                rate = window_examples / max(elapsed, 1e-9)
                progress.update(bar, advance=1, rate=f"{rate:.1f} ex/s")
                if cfg.logging_steps and pos["step"] % cfg.logging_steps == 0:
                    log.log({"type": "train", "step": pos["step"], "epoch": epoch + 1,
                             "loss": window_loss / window_batches, "lr": scheduler.get_last_lr()[0],
                             "examples_per_s": rate, "tokens_per_s": window_tokens / max(elapsed, 1e-9)})
                    window_loss, window_batches, window_examples, window_tokens = 0.0, 0, 0, 0
                    window_start = time.perf_counter()
                if cfg.save_steps and pos["step"] % cfg.save_steps == 0:
                    pos["train_seconds"] += time.perf_counter() - epoch_start
                    epoch_start = time.perf_counter()
                    checkpoint()
            pos["train_seconds"] += time.perf_counter() - epoch_start
            if window_batches:  # the epoch's last steps, so short runs log a loss too
                elapsed = time.perf_counter() - window_start
                log.log({"type": "train", "step": pos["step"], "epoch": epoch + 1,
                         "loss": window_loss / window_batches, "lr": scheduler.get_last_lr()[0],
                         "examples_per_s": window_examples / max(elapsed, 1e-9),
                         "tokens_per_s": window_tokens / max(elapsed, 1e-9)})
                window_loss, window_batches, window_examples, window_tokens = 0.0, 0, 0, 0
            pos["epoch"], pos["batch"] = epoch + 1, 0
            if evaluate is not None:
                model.eval()
                with torch.no_grad():
                    metrics = evaluate(model)
                record = {"type": "eval", "split": "dev", "step": pos["step"], "epoch": epoch + 1,
                          **{k: v for k, v in metrics.items() if isinstance(v, (int, float))}}
                log.log(record)
                pos["history"].append(record)
                score = float(metrics[select_metric])
                if pos["best_metric"] is None or score > pos["best_metric"]:
                    pos["best_metric"], pos["best_epoch"] = score, epoch + 1
                    if main:
                        with atomic_path(ckpt_dir / "best.pt") as tmp:
                            torch.save(model.state_dict(), tmp)
                if console is not None and main:
                    console.print(f"epoch {epoch + 1}/{cfg.epochs}: dev {select_metric} "
                                  f"{score:.4f} (best {pos['best_metric']:.4f}, epoch {pos['best_epoch']})")
            checkpoint()
    log.close()
    if evaluate is not None and (ckpt_dir / "best.pt").is_file():
        model.load_state_dict(torch.load(ckpt_dir / "best.pt", map_location=runtime.device,
                                         weights_only=True))
    model.eval()
    return TrainResult(steps=pos["step"], history=pos["history"], best_epoch=pos["best_epoch"],
                       best_metric=pos["best_metric"], train_seconds=pos["train_seconds"],
                       train_examples=pos["train_examples"])
