"""What the training loop prints and draws: the warm-up warning, the evaluation line, a batch's source for messages,
``curves.png`` (:mod:`bertkit.training.loop` calls these; they change nothing of the run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from bertkit.training.batches import BatchSource
from bertkit.training.optim import warmup_steps
from bertkit.training.state import Parts, TrainState


def warn_long_warmup(console: Console | None, cfg: Any, total_steps: int) -> None:
    """Warn on ``console`` when a warm-up given in steps (``cfg.warmup`` >= 1) is not shorter
    than the run's ``total_steps``: the learning rate would never reach its peak."""
    warm = warmup_steps(cfg.warmup, total_steps)
    if console is not None and cfg.warmup >= 1 and warm >= total_steps:
        console.print(f"warning: the warm-up ({warm:,} steps) is not shorter than the run "
                      f"({total_steps:,} steps): the learning rate never reaches its peak "
                      f"{cfg.lr:g}; give a shorter --warmup (a ratio < 1 scales with the run)",
                      highlight=False, markup=False)


def describe_eval(record: dict[str, Any], score: float | None, state: TrainState,
                  select_metric: str | None, parts: Parts, epoch: int,
                  undefined: str | None = None) -> str:
    """The console line for an evaluation: ``epoch 2/3: dev f1 81.23 (best 82.00, epoch 1)``
    (``step N/M`` with ``eval_steps``); without selection, every float metric. Scores are shown
    in points (x100), as the result tables show them; losses as they are. A selection score
    that is undefined (``score`` None) is said so, with ``undefined`` (why) when given, and
    chooses nothing."""
    if select_metric is None:
        shown = ", ".join(f"{k} {_points(k, v, parts.score_scale)}" for k, v in record.items()
                          if isinstance(v, float) and k not in ("time_s", "train_seconds"))
        return f"step {state.step}/{parts.total_steps}: dev {shown}"
    best = state.history[state.best_index] if state.best_index is not None else {}
    if parts.cfg.eval_steps:
        where, best_at = f"step {state.step}/{parts.total_steps}", f"step {best.get('step', '?')}"
    else:
        where, best_at = f"epoch {epoch + 1}/{parts.n_epochs}", f"epoch {state.best_epoch}"
    scale = parts.score_scale
    if score is None:
        kept = (f"best {_points(select_metric, state.best_metric, scale)}, {best_at}"
                if state.best_metric is not None else "no epoch chosen yet: the last weights "
                                                      "are kept if none is")
        return (f"{where}: dev {select_metric} undefined"
                f"{': ' + undefined if undefined else ''}; not used to choose an epoch ({kept})")
    return (f"{where}: dev {select_metric} {_points(select_metric, score, scale)} "
            f"(best {_points(select_metric, state.best_metric, scale)}, {best_at})")


def _points(name: str, value: float, scale: float = 100.0) -> str:
    """A score as points with two decimals (``scale`` 100 for a fraction, 1 for points); a loss
    or perplexity as it is."""
    if "loss" in name or "perplexity" in name:
        return f"{value:.4f}"
    return f"{scale * value:.2f}"


def _where(data: BatchSource, epoch: int, index: int) -> str:
    """A batch's source lines if the source can name them, else its number."""
    if hasattr(data, "describe"):
        return data.describe(epoch, index)
    return f"batch {index + 1} of epoch {epoch + 1}"


def torch_world_size() -> int:
    """Processes in this run (1 without ``torch.distributed``)."""
    from bertkit.training.devices import world_size

    return world_size()


def _draw_curves(output_dir: Path, console: Console | None) -> None:
    """Write ``curves.png`` (loss and evaluation curves); a plotting failure never fails a run."""
    try:
        from bertkit.outputs.plots import plot_run

        plot_run(output_dir)
    except Exception as exc:  # noqa: BLE001 - a missing font or backend must not cost the run
        if console is not None:
            from rich.markup import escape

            console.print(f"[yellow]warning:[/] could not draw curves.png: {escape(str(exc))}",
                          highlight=False)
