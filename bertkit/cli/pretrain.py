"""``bertkit pretrain``: thin wrapper over :func:`bertkit.tasks.pretrain.pretrain`."""

from __future__ import annotations

from bertkit.cli._app import app, make_console, user_errors
from bertkit.cli._tasks import settings_command
from bertkit.workflows.command_settings import build_settings
from bertkit.tasks.pretrain.config import PretrainConfig


def _pretrain(flags: dict, recipe) -> None:
    from bertkit.tasks.pretrain import pretrain
    from bertkit.training.devices import is_main_process

    built = build_settings(PretrainConfig, "pretrain", flags=flags, recipe=recipe)
    cfg, console = built.config, make_console()
    if is_main_process():
        console.print(built.line(), highlight=False, markup=False)
    results = pretrain(cfg, console)
    if "train" not in results:  # a non-main process of a multi-process run
        return
    train = results["train"]
    parts = ", ".join(f"{k} {v:.4f}" for k, v in train.items())
    console.print(f"trained {results['steps']} steps, {results['train_tokens']:,} tokens ({parts}); "
                  f"{results['tokens_per_second']:.0f} tokens/s", highlight=False)
    if results["valid"]:
        v = results["valid"]
        console.print(f"validation (token masking): loss {v['loss']:.4f}, perplexity "
                      f"{v['perplexity']:.2f}, masked-token accuracy {100 * v['accuracy']:.2f}%",
                      highlight=False)
    console.print(f"run directory: {cfg.output_dir} (model: {cfg.output_dir}/model)", highlight=False)


pretrain_cli = app.command("pretrain")(user_errors(settings_command(PretrainConfig, _pretrain, """
    MLM pretraining: continue from a model (domain adaptation) or start from scratch.

    Masking: token (BERT), wwm (whole words) or span (SpanBERT, with the span-boundary
    objective); --nsp adds BERT's next-sentence prediction on sentence pairs. Writes a run
    directory: config.yaml, metrics.jsonl, results.json and model/ (loadable with
    AutoModelForMaskedLM and pipeline("fill-mask"); usable as --model for `bertkit finetune`).
    """, skip=("epochs",))))
pretrain_cli.__name__ = "pretrain_cli"
