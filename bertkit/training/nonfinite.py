"""Batches whose training loss is not finite: found when the loop reads its losses (logging
time, never per batch), counted, logged as ``skipped_batch`` records and, beyond
``--skip-nonfinite``, an error naming the batch's source lines. The update itself was already
skipped on the device (:func:`bertkit.training.loop.optimizer_step`)."""

from __future__ import annotations

from bertkit.errors import BertkitError
from bertkit.training.batches import BatchSource
from bertkit.training.display import _where
from bertkit.training.state import BatchOut, Parts, TrainState


def watch_nonfinite(parts: Parts, state: TrainState, data: BatchSource) -> None:
    """Have the meter call :func:`skip_nonfinite` for each batch it finds with a non-finite
    loss when it reads the losses (logging time), that batch's examples and tokens uncounted."""
    def found(epoch: int, index: int, step: int, values: dict, examples: int,
              tokens: int) -> None:
        state.train_examples -= examples
        state.train_tokens -= tokens
        skip_nonfinite(parts, state, BatchOut.of(values, examples, tokens),
                       _where(data, epoch, index), epoch, index, step)

    parts.meter.on_nonfinite = found


def skip_nonfinite(parts: Parts, state: TrainState, out: BatchOut, where: str, epoch: int,
                   index: int, step: int | None = None) -> None:
    """Count a batch whose loss was not finite: it is logged as a ``skipped_batch`` record and
    counted in ``state.skipped``. Its optimiser step was already skipped on the device (the
    fused AdamW kernel's ``found_inf``, see :func:`optimizer_step`): weights and moments are
    those before the step. The loop calls this when it reads the losses (logging time), so the
    error below comes at the first read after the batch, naming that batch.

    Raises:
        BertkitError: more than ``cfg.skip_nonfinite`` such batches (the first one by default),
            naming the step, epoch and the batch's source lines (``where``).
    """
    loss = out.values["loss"]
    step = state.step + 1 if step is None else step  # the optimiser step the batch was in
    state.skipped += 1
    limit = parts.cfg.skip_nonfinite
    if state.skipped > limit:
        raise BertkitError(
            f"non-finite training loss ({loss}) at step {step}, epoch {epoch + 1}, "
            f"on {where}",
            expected="a lower --lr, " + ("--precision fp32, " if parts.runtime.dtype is not None
                                         else "") + "or --skip-nonfinite N to skip up to N "
                     "such batches")
    parts.log.log({"type": "skipped_batch", "step": step - 1, "epoch": epoch + 1,
                   "batch": index, "source": where, "loss": str(loss)})
    if parts.console is not None and parts.out.main:
        parts.console.print(f"[yellow]warning:[/] non-finite loss on {where}: batch skipped "
                            f"({state.skipped}/{limit})", highlight=False)
