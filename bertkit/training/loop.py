"""The training loop shared by every task.

It knows no task: it receives a model whose ``forward(**batch)`` returns a dict with a scalar
``"loss"`` (and optionally loss components ``*_loss``, logged separately), a :class:`BatchSource`
and, optionally, an evaluation function run after each epoch or every N steps; it trains for a
number of epochs or, with ``max_steps``, optimiser steps. AdamW with linear warm-up/decay,
accumulation, clipping, bf16/fp16 autocast, atomic checkpoints, exact resume (weights, optimiser,
schedule, RNG, data position), best-epoch selection, metrics.jsonl (and TensorBoard or MLflow),
a progress bar, DDP or FSDP, SIGINT/SIGTERM checkpoint-and-exit, non-finite loss handling.

:func:`train` is the algorithm (as nanoGPT's ``train.py`` and torchtune's recipes: the loop
visible at a glance); each step it takes is a plain function below, tested on its own:
:func:`open_run` (:func:`setup`, :func:`resume`, the logs), :func:`forward_backward`,
:func:`skip_nonfinite`, :func:`optimizer_step`, :func:`log_evaluate_save` (logging,
:func:`evaluate_and_select`, :func:`~bertkit.training.saving.save_step`), :func:`end_epoch`,
:func:`~bertkit.training.saving.stop_run`, :func:`finish`; what it prints and draws is in
:mod:`bertkit.training.display` and :class:`~bertkit.training.logging.StepProgress`. The run's progress is one :class:`TrainState`; what it trains with is one
:class:`Parts`. In a multi-process run there is one all-reduce per forward pass
(:func:`~bertkit.training.distributed.reduce_batch`: loss scale, logged losses and stop flag).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import torch
from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.outputs.provenance import write_run_environment
from bertkit.training.batches import BatchSource, TrainResult, batch_examples, plan_steps
from bertkit.training.checkpoint import list_checkpoints, load_checkpoint, set_rng_state
from bertkit.training.config import TrainConfig
from bertkit.training.devices import Runtime, seed_everything
from bertkit.training.distributed import (barrier, broadcast_flag, init_distributed,
                                          is_distributed, reduce_batch, shard_batch, wrap_model)
from bertkit.training.fsdp import load_full_state, shard_model
from bertkit.training.masks import broadcast_padding_masks
from bertkit.training.logging import StepProgress, open_metrics_log
from bertkit.training.optim import build_optimizer, build_scheduler, load_optimizer_state
from bertkit.training.display import (_draw_curves, describe_eval, torch_world_size,
                                     warn_long_warmup)
from bertkit.training.rundir import RunWriter, check_free_space, checkpoint_bytes
from bertkit.training.saving import save_step, stop_run, sync_model
from bertkit.training.signals import StopRequest
from bertkit.training.nonfinite import skip_nonfinite, watch_nonfinite  # noqa: F401 (re-exported)
from bertkit.training.state import BatchOut, Parts, TrainState, defined_score

Evaluate = Callable[[torch.nn.Module], dict[str, Any]]  # the model in eval mode -> dev metrics


def train(model: torch.nn.Module, data: BatchSource, cfg: TrainConfig, runtime: Runtime,
          output_dir: Path, evaluate: Evaluate | None = None,
          select_metric: str | None = "f1", console: Console | None = None,
          score_scale: float = 100.0, tracker: Any = None) -> TrainResult:
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
        console: where the progress bar draws on a terminal; into a file or pipe, a plain
            line every 30 s (:class:`~bertkit.training.logging.PlainProgress`).
        score_scale: dev scores are printed as ``score_scale * value`` with two decimals:
            100 for scores in [0, 1], 1 for scores already in points (SQuAD's EM/F1).
        tracker: the caller's open MLflow run (``--report-to mlflow``), which gets every record
            of ``metrics.jsonl``; None: see :func:`~bertkit.training.logging.open_metrics_log`.

    Returns:
        a :class:`TrainResult`. On return, the model holds the best (or last) weights.

    Raises:
        BertkitError: ``cfg.resume`` with no checkpoint, bad settings, a non-finite loss, or
            running out of device memory (with a hint).
    """
    parts, state = open_run(model, data, cfg, runtime, output_dir, console, score_scale, tracker)
    accum, stop_seen = cfg.gradient_accumulation, False
    progress = StepProgress(console if parts.out.main else None, parts.total_steps,
                            parts.n_epochs, start_step=state.step)
    with parts.log, progress, StopRequest() as stop:
        for epoch in range(state.epoch, parts.n_epochs):
            if state.step >= parts.total_steps:
                break
            parts.net.train()
            parts.meter.restart()
            n_batches = data.num_batches(epoch)
            for i, batch in enumerate(data.iter_batches(epoch, state.batch), start=state.batch):
                out = forward_backward(parts, batch, stop.requested)
                stop_seen |= out.stop  # agreed by every rank (one all-reduce with the losses)
                parts.meter.add(out, epoch, i, state.step + 1)  # read at logging time
                state.count(out)
                if (i + 1) % accum and i + 1 != n_batches:
                    continue  # accumulate gradients over the step's batches
                optimizer_step(parts)
                state.step, state.batch = state.step + 1, i + 1
                progress.update(state.step, epoch + 1, parts.meter)
                last = state.step >= parts.total_steps
                log_evaluate_save(parts, state, epoch, last, evaluate, select_metric)
                if stop_seen if is_distributed() else stop.requested:
                    stop_run(parts, state, stop.signal_name)
                if last:
                    break
            end_epoch(parts, state, epoch, evaluate, select_metric)
            if broadcast_flag(stop.requested, runtime.device):  # e.g. Ctrl-C during evaluation
                stop_run(parts, state, stop.signal_name)
    return finish(parts, state, keep_best=evaluate is not None and select_metric is not None)


def open_run(model: torch.nn.Module, data: BatchSource, cfg: TrainConfig, runtime: Runtime,
             output_dir: Path, console: Console | None, score_scale: float,
             tracker: Any) -> tuple[Parts, TrainState]:
    """Check the settings, :func:`setup`, :func:`resume` with ``cfg.resume``, record the
    environment (rank 0) and open the logs. Arguments and errors as :func:`train`'s."""
    cfg.check_ranges()
    parts = setup(model, data, cfg, runtime, RunWriter(output_dir), console)
    parts.score_scale = score_scale
    parts.meter.source_stats = getattr(data, "stats", None)  # e.g. Prefetcher's data wait
    state = resume(parts) if cfg.resume else TrainState()
    if parts.out.main:  # after a resume's checkpoint is found: a failed resume records nothing
        write_run_environment(parts.out.path("environment.json"), runtime, cfg.seed,
                              torch_world_size(), cfg.resume)
    parts.log = open_metrics_log(cfg, parts.out, state.step if cfg.resume else None, tracker,
                                 console)  # metrics.jsonl, and TensorBoard or MLflow
    watch_nonfinite(parts, state, data)  # batches found non-finite when losses are read
    return parts, state


def log_evaluate_save(parts: Parts, state: TrainState, epoch: int, last: bool,
                      evaluate: Evaluate | None, select_metric: str | None) -> None:
    """After an optimiser step: log, evaluate (also at the ``last`` step) and save (not at the
    last: :func:`end_epoch` does) at their ``cfg.*_steps`` intervals."""
    cfg = parts.cfg
    if state.step % cfg.logging_steps == 0:
        parts.meter.flush(parts, state, epoch)
    if evaluate is not None and cfg.eval_steps and (state.step % cfg.eval_steps == 0 or last):
        evaluate_and_select(parts, state, evaluate, select_metric, epoch)
    if cfg.save_steps and state.step % cfg.save_steps == 0 and not last:
        parts.meter.bank(state)
        save_step(parts, state)


def end_epoch(parts: Parts, state: TrainState, epoch: int, evaluate: Evaluate | None,
              select_metric: str | None) -> None:
    """After ``epoch``: log its last steps, evaluate (unless by steps) and save a checkpoint."""
    parts.meter.bank(state)  # counted now: evaluation must not count it again
    parts.meter.flush(parts, state, epoch)  # the epoch's last steps: short runs log too
    state.epoch, state.batch = epoch + 1, 0
    if evaluate is not None and not parts.cfg.eval_steps:
        evaluate_and_select(parts, state, evaluate, select_metric, epoch)
    save_step(parts, state)


def setup(model: torch.nn.Module, data: BatchSource, cfg: TrainConfig, runtime: Runtime,
          out: RunWriter, console: Console | None = None) -> Parts:
    """Seed, join the process group, place (or shard) the model and build the optimiser,
    schedule and loss scaler for the planned number of steps.

    Raises:
        BertkitError: too little free disk for a checkpoint, an incomplete launcher
            environment, or data that gives no batch.
    """
    out.mkdir()
    seed_everything(cfg.seed)
    init_distributed(runtime.device)
    sharded = cfg.fsdp and is_distributed()
    if not sharded:
        model.to(runtime.device)
    if out.main:
        check_free_space(out.root, checkpoint_bytes(model))
    net = shard_model(model, runtime.device) if sharded else wrap_model(model, runtime.device)
    if sharded:
        model.to("cpu")  # the shards train; this full copy only receives gathered weights
    n_epochs, total_steps = plan_steps(data, cfg)
    optimizer = build_optimizer(net if sharded else model, cfg.lr, cfg.weight_decay,
                                runtime.device, sharded=sharded)
    scheduler = build_scheduler(optimizer, cfg.warmup, total_steps, cfg.lr_schedule)
    warn_long_warmup(console if out.main else None, cfg, total_steps)
    scaler = torch.amp.GradScaler(runtime.device.type, enabled=runtime.dtype == torch.float16)
    parts = Parts(model, net, optimizer, scheduler, scaler, runtime, cfg, out, n_epochs,
                  total_steps, sharded, console)
    parts.hooks = broadcast_padding_masks(model)  # no padding_mask.all() read per forward
    return parts


def resume(parts: Parts) -> TrainState:
    """Load the newest ``checkpoints/step_N``: weights, optimiser, schedule, loss scale and RNG
    states (a checkpoint of any bertkit version); say where it continues; return its state.

    Raises:
        BertkitError: the run has no complete checkpoint.
    """
    found = list_checkpoints(parts.ckpt_dir)
    if not found:
        raise BertkitError("--resume given but the run has no checkpoint (it stopped before "
                           "its first one)", file=parts.ckpt_dir,
                           expected="a checkpoints/step_N folder from an earlier run; to "
                                    "start this run again: --overwrite instead of --resume")
    saved = load_checkpoint(found[-1], parts.model)
    if parts.sharded:
        load_full_state(parts.net, parts.optimizer, parts.model.state_dict(), saved["optimizer"])
    else:
        load_optimizer_state(parts.optimizer, saved["optimizer"])
    parts.scheduler.load_state_dict(saved["scheduler"])
    parts.scaler.load_state_dict(saved["scaler"])
    set_rng_state(saved["rng"])
    state = TrainState.from_position(saved["position"])
    if parts.console is not None and parts.out.main:
        parts.console.print(state.describe_resume(), highlight=False)
    return state


def forward_backward(parts: Parts, batch: dict[str, torch.Tensor],
                     stop_requested: bool = False) -> BatchOut:
    """Forward this rank's slice of a global batch, agree with the other ranks (one all-reduce),
    and backpropagate ``loss * scale / gradient_accumulation`` (the AMP scaler's scale too).

    Args:
        batch: the global batch, ``[B, T]`` CPU tensors; this rank keeps its rows.
        stop_requested: this process received SIGINT/SIGTERM (shared in the all-reduce).

    Returns:
        a :class:`BatchOut`; its losses are global means (each rank weighted by its share of
        the loss targets, ``loss_count`` if the model returns one, else its examples).

    Raises:
        BertkitError: out of device memory (hint: smaller batch with accumulation).
    """
    runtime, accum = parts.runtime, parts.cfg.gradient_accumulation
    examples, tokens = batch_examples(batch)
    batch = runtime.to_device(shard_batch(batch, examples))
    try:
        with runtime.autocast():
            out = parts.net(**batch)
        loss = out["loss"]
        named = {"loss": loss.detach().float()}
        named.update((k, v.detach().float()) for k, v in out.items()
                     if k.endswith("_loss") and torch.is_tensor(v) and v.ndim == 0)
        count = 1  # read only in a multi-process run (reading a CUDA count syncs the device)
        if is_distributed():
            count = out.get("loss_count")
            count = batch_examples(batch)[0] if count is None else count
        scale, values, stop = reduce_batch(count, torch.stack(list(named.values())),
                                           stop_requested, runtime.device)
        parts.scaler.scale(loss * scale / accum).backward()
    except torch.OutOfMemoryError:
        raise BertkitError(f"out of device memory with batch size {parts.cfg.batch_size}",
                           expected="a smaller --batch-size with --gradient-accumulation to "
                                    "keep the effective batch") from None
    return BatchOut(values, tuple(named), examples, tokens, stop)  # values stay on the device


def optimizer_step(parts: Parts) -> None:
    """Clip the gradient norm (``cfg.max_grad_norm`` > 0, after unscaling), step the optimiser
    through the AMP scaler, advance the schedule and clear the gradients.

    A step one of whose batches had a non-finite loss (the meter's device flag) changes
    nothing: the fused AdamW kernel gets the flag as ``found_inf`` and skips the update on the
    device, without the host reading it (as ``GradScaler`` does for fp16 overflows). An
    optimiser without that argument (FSDP's foreach AdamW) reads the flag instead (one sync)."""
    flag = parts.meter.take_step_flag()
    if parts.cfg.max_grad_norm > 0:
        parts.scaler.unscale_(parts.optimizer)
        torch.nn.utils.clip_grad_norm_(parts.net.parameters(), parts.cfg.max_grad_norm)
    if parts.scaler.is_enabled() or flag is None:  # fp16: the scaler finds the overflow itself
        parts.scaler.step(parts.optimizer)
    elif all(g.get("fused") for g in parts.optimizer.param_groups):
        parts.optimizer.found_inf = flag
        try:
            parts.optimizer.step()
        finally:
            del parts.optimizer.found_inf
    elif not bool(flag):  # read here only without the fused kernel
        parts.optimizer.step()
    parts.scaler.update()
    parts.scheduler.step()
    parts.optimizer.zero_grad(set_to_none=True)


def evaluate_and_select(parts: Parts, state: TrainState, evaluate: Evaluate,
                        select_metric: str | None, epoch: int) -> dict[str, Any] | None:
    """Score dev on rank 0 (the others wait), log an ``eval`` record and keep the weights in
    ``checkpoints/best.pt`` when ``select_metric`` (higher is better) improves. Evaluation time
    is not training time. The record carries ``train_tokens`` and ``train_seconds`` so far (a
    learning curve against tokens seen or training time). Returns the record (None off rank 0).

    Raises:
        KeyError: ``evaluate`` returned no ``select_metric`` (None or NaN: undefined, never best).
    """
    parts.meter.flush(parts, state, epoch)
    parts.meter.bank(state)
    sync_model(parts)
    record = None
    if parts.out.main:
        model = parts.model
        model.to(parts.runtime.device)
        model.eval()
        with torch.no_grad():
            metrics = evaluate(model)
        if parts.sharded:  # rank 0's full copy leaves the device while the shards train
            model.to("cpu")
        parts.net.train()
        record = {"type": "eval", "split": "dev", "step": state.step, "epoch": epoch + 1,
                  "train_tokens": state.train_tokens,
                  "train_seconds": round(state.train_seconds, 3),
                  **{k: v for k, v in metrics.items() if isinstance(v, (int, float))}}
        parts.log.log(record)
        state.history.append(record)
        score = None
        if select_metric is not None:
            score = defined_score(metrics, select_metric)
            if score is not None and (state.best_metric is None or score > state.best_metric):
                state.best_metric, state.best_epoch = score, epoch + 1
                state.best_index = len(state.history) - 1
                parts.out.torch_save("checkpoints/best.pt", model.state_dict())
        if parts.console is not None:
            parts.console.print(describe_eval(record, score, state, select_metric, parts,
                                              epoch, metrics.get("undefined")), highlight=False)
    barrier()
    parts.meter.restart()
    return record


def finish(parts: Parts, state: TrainState, keep_best: bool) -> TrainResult:
    """End a run: gather FSDP weights, draw ``curves.png`` and, with ``keep_best``, load the
    best evaluation's weights (rank 0); the model is left in eval mode."""
    parts.log.close()
    for hook in parts.hooks:
        hook.remove()
    sync_model(parts)
    best = parts.ckpt_dir / "best.pt"
    if parts.out.main:
        parts.model.to(parts.runtime.device)
        _draw_curves(parts.out.root, parts.console)
        parts.log.finish_tracking(parts.out.root)  # an MLflow run the loop opened itself
        if keep_best and best.is_file():
            parts.model.load_state_dict(torch.load(best, map_location=parts.runtime.device,
                                                   weights_only=True))
    parts.model.eval()
    return state.result()
