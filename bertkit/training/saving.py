"""Saving a run's weights during training: the FSDP gather, step checkpoints and the
checkpoint-and-stop on SIGINT/SIGTERM (:func:`bertkit.training.loop.train`'s steps)."""

from __future__ import annotations

from bertkit.training.checkpoint import save_checkpoint
from bertkit.training.fsdp import full_model_state, full_optimizer_state
from bertkit.training.state import Parts, TrainState


def sync_model(parts: Parts) -> None:
    """Under FSDP, gather the trained weights into rank 0's plain ``model`` (a collective: every
    rank calls it); otherwise nothing."""
    if parts.sharded:
        state = full_model_state(parts.net)
        if parts.out.main:
            parts.model.load_state_dict(state)


def save_step(parts: Parts, state: TrainState) -> None:
    """Write ``checkpoints/step_<step>`` (weights; optimiser, schedule, scaler, RNG and
    ``state.position()``) atomically on rank 0, keeping ``cfg.save_total_limit`` of them. Under
    FSDP every rank first helps gather the full state."""
    if parts.sharded:
        model_state = full_model_state(parts.net)
        optim_state = full_optimizer_state(parts.net, parts.optimizer)
    elif parts.out.main:
        model_state, optim_state = parts.model.state_dict(), parts.optimizer.state_dict()
    if parts.out.main:
        save_checkpoint(parts.ckpt_dir, state.step, model_state, {
            "optimizer": optim_state, "scheduler": parts.scheduler.state_dict(),
            "scaler": parts.scaler.state_dict(), "position": state.position()},
            keep=parts.cfg.save_total_limit)


def stop_run(parts: Parts, state: TrainState, signal_name: str | None) -> None:
    """Save a checkpoint at this step and end the run (SIGINT/SIGTERM on any rank).

    Raises:
        RunStopped: always (a :class:`BertkitError`); exit code 130 (SIGINT) or 143 (SIGTERM),
            naming the checkpoint and ``--resume --output-dir RUN_DIR``.
    """
    parts.meter.bank(state)
    parts.meter.flush(parts, state, state.epoch)
    save_step(parts, state)
    parts.log.close()
    from bertkit.training.rundir import RunStopped

    raise RunStopped(signal_name, state.step, parts.ckpt_dir, parts.out.root)
