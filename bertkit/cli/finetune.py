"""``bertkit finetune ner``: thin wrapper over :func:`bertkit.tasks.ner.finetune_ner`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console

from bertkit.cli import _options as opt
from bertkit.cli._app import finetune_app, user_errors
from bertkit.cli._report import entity_table
from bertkit.config import build_config, load_recipe


@finetune_app.command("ner")
@user_errors
def ner_cli(
    data: Annotated[Optional[str], typer.Option("--data", "-d", help="Registered set (bc5cdr, ncbi-disease, jnlpba, bc2gm; under $BERTKIT_DATA) or a directory with train/dev/test files. [default: bc5cdr]")] = None,
    model: opt.Model = None,
    crf: Annotated[Optional[bool], typer.Option("--crf/--no-crf", help="Linear-chain CRF over word scores. [default: no-crf]")] = None,
    label_all_subwords: Annotated[Optional[bool], typer.Option("--label-all-subwords", help="Train continuation pieces too (B- pieces after the first as I-).")] = None,
    epochs: opt.Epochs = None, lr: opt.LR = None, batch_size: opt.BatchSize = None,
    max_length: opt.MaxLength = None, seed: opt.Seed = None, output_dir: opt.OutputDir = None,
    gradient_accumulation: opt.GradAccum = None, warmup: opt.Warmup = None,
    weight_decay: opt.WeightDecay = None, max_grad_norm: opt.MaxGradNorm = None,
    precision: opt.Precision = None, device: opt.Device = None, save_steps: opt.SaveSteps = None,
    logging_steps: opt.LoggingSteps = None, resume: opt.Resume = None, overwrite: opt.Overwrite = None,
    eval_batch_size: Annotated[Optional[int], typer.Option("--eval-batch-size", help="Windows per batch when evaluating. [default: 64]", min=1)] = None,
    max_train_samples: Annotated[Optional[int], typer.Option("--max-train-samples", help="Use only the first N training sentences.", min=1)] = None,
    max_eval_samples: Annotated[Optional[int], typer.Option("--max-eval-samples", help="Use only the first N dev and test sentences.", min=1)] = None,
    recipe: opt.Recipe = None,
) -> None:
    """Fine-tune an encoder for named-entity recognition (IOB2), keep the best dev epoch, score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.conll and
    model/ (loadable with AutoModelForTokenClassification and pipeline("token-classification")).
    """
    from bertkit.tasks.ner import NERConfig, finetune_ner

    flags = opt.train_options(
        data=data, model=model, crf=crf, label_all_subwords=label_all_subwords, epochs=epochs,
        lr=lr, batch_size=batch_size, max_length=max_length, seed=seed, output_dir=output_dir,
        gradient_accumulation=gradient_accumulation, warmup=warmup, weight_decay=weight_decay,
        max_grad_norm=max_grad_norm, precision=precision, device=device, save_steps=save_steps,
        logging_steps=logging_steps, resume=resume, overwrite=overwrite,
        eval_batch_size=eval_batch_size, max_train_samples=max_train_samples,
        max_eval_samples=max_eval_samples)
    cfg = build_config(NERConfig, load_recipe(recipe, "finetune ner") if recipe else None, flags,
                       source=str(recipe) if recipe else "options")
    console = Console()
    results = finetune_ner(cfg, console)
    console.print(entity_table(results["test"], f"test: {cfg.data}"))
    console.print(f"run directory: {cfg.output_dir} (best epoch {results['best_epoch']}; "
                  f"{results['train_sentences_per_second']:.1f} training sentences/s)", highlight=False)
