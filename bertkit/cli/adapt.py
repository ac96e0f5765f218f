"""``bertkit adapt``: thin wrapper over :func:`bertkit.workflows.adapt.adapt`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Literal, Optional

import typer

from bertkit.cli import _options as opt
from bertkit.cli._app import app, make_console, user_errors
from bertkit.settings import build_settings
from bertkit.tasks.registry import TASKS, load_attr

AdaptTask = Literal[tuple(TASKS)]
_DATA_DEFAULTS = " / ".join(load_attr(e.config).data for e in TASKS.values())


@app.command("adapt")
@user_errors
def adapt_cli(
    task: Annotated[Optional[AdaptTask], typer.Option("--task", "-t", help="Fine-tuning task: " + ", ".join(list(TASKS)[:-1]) + f" or {list(TASKS)[-1]}. \\[default: ner]")] = None,
    data: Annotated[Optional[str], typer.Option("--data", "-d", help=f"The task's data set (registered name or directory). \\[default: {_DATA_DEFAULTS}]")] = None,
    model: opt.Model = None,
    extend_vocab: Annotated[Optional[int], typer.Option("--extend-vocab", help="First add up to N words the model splits (`vocab extend`), ranked by the adaptation text. \\[default: 0, off]", min=0)] = None,
    extend_vocab_from: Annotated[Optional[str], typer.Option("--extend-vocab-from", help="Vocabulary the new words come from. \\[default: scivocab-uncased]")] = None,
    corpus: Annotated[Optional[List[Path]], typer.Option("--corpus", "-c", help="DAPT: continue the MLM on this domain text (file, .gz or directory; repeatable).")] = None,
    valid: Annotated[Optional[Path], typer.Option("--valid", help="Held-out text: validation MLM loss of each pretraining stage.")] = None,
    task_text: Annotated[Optional[str], typer.Option("--task-text", help="TAPT: continue the MLM on a task's training text: TASK:DATA (ner:bc5cdr, re:chemprot, dep:genia, cls:scicite), 'task' (the fine-tuning data) or a file: CoNLL, CoNLL-U, relation or classification JSONL, CSV/TSV with a text column, ID<TAB>TEXT, or plain text. After DAPT when both are given.")] = None,
    pretrain_steps: Annotated[Optional[int], typer.Option("--pretrain-steps", help="DAPT optimiser steps. \\[default: the pretrain recipe's, else 300]", min=1)] = None,
    tapt_epochs: Annotated[Optional[int], typer.Option("--tapt-epochs", help="TAPT passes over the task text. \\[default: 10]", min=1)] = None,
    masking: Annotated[Optional[opt.Masking], typer.Option("--masking", help="Pretraining masking: token, wwm or span (+ SBO). \\[default: span]")] = None,
    pretrain_lr: Annotated[Optional[float], typer.Option("--pretrain-lr", help="Pretraining peak learning rate. \\[default: 1e-4]")] = None,
    pretrain_batch_size: Annotated[Optional[int], typer.Option("--pretrain-batch-size", help="Pretraining sequences per step. \\[default: 32]", min=1)] = None,
    max_seq_length: Annotated[Optional[int], typer.Option("--max-seq-length", help="Pretraining tokens per packed sequence. \\[default: 128]", min=8)] = None,
    head_warmup_steps: Annotated[Optional[int], typer.Option("--head-warmup-steps", help="Train a new MLM head alone for N steps first (where this bertkit's pretraining has it).", min=0)] = None,
    pretrain_recipe: Annotated[Optional[Path], typer.Option("--pretrain-recipe", help="A pretrain recipe (file or name) under the pretraining options above.")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", help="Fine-tuning epochs. \\[default: the task's (3; dep 6)]", min=1)] = None,
    lr: Annotated[Optional[float], typer.Option("--lr", help="Fine-tuning peak learning rate. \\[default: the task's]")] = None,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", "-b", help="Fine-tuning batch size. \\[default: the task's]", min=1)] = None,
    max_train_samples: Annotated[Optional[int], typer.Option("--max-train-samples", help="Fine-tune on the first N training examples only (TAPT on the task's own data reads the same N).", min=1)] = None,
    max_eval_samples: Annotated[Optional[int], typer.Option("--max-eval-samples", help="Score the first N dev and test examples only.", min=1)] = None,
    finetune_recipe: Annotated[Optional[Path], typer.Option("--finetune-recipe", help="A finetune recipe (file or name, e.g. bc5cdr-ner-minilm) under the fine-tuning options above.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Pretraining seed, and the fine-tuning seed without --seeds. \\[default: 42]")] = None,
    seeds: Annotated[Optional[str], typer.Option("--seeds", help="Fine-tuning seeds, e.g. 1,2,3: one run each, mean and standard deviation.")] = None,
    compare: Annotated[Optional[bool], typer.Option("--compare/--no-compare", help="Also fine-tune the unadapted model with the same settings and print both. \\[default: no-compare]")] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="auto, cpu, cuda, cuda:N or mps (every stage). \\[default: auto]")] = None,
    precision: Annotated[Optional[opt.PrecisionChoice], typer.Option("--precision", help="auto, fp32, bf16 or fp16 (every stage). \\[default: auto]")] = None,
    cache_dir: Annotated[Optional[Path], typer.Option("--cache-dir", help="Tokenised-corpus cache. \\[default: $BERTKIT_CACHE or ~/.cache/bertkit]")] = None,
    output_dir: Annotated[Optional[Path], typer.Option("--output-dir", "-o", help="Run directory: vocab/, pretrain/, finetune/, baseline/, summary.json. Run the same command again to continue: finished stages with the same settings are skipped, a stopped one continues from its last checkpoint, a changed one runs again with the stages after it. \\[default: runs/adapt-<task>-<time>]")] = None,
    overwrite: Annotated[Optional[bool], typer.Option("--overwrite", help="Run every stage again, replacing the earlier outputs.")] = None,
    recipe: opt.Recipe = None,
) -> None:
    """Adapt an encoder to a domain and task, then fine-tune it: optional vocabulary extension,
    continued MLM on a domain corpus (DAPT) and/or the task's own training text (TAPT;
    Gururangan et al. 2020), fine-tuning, and with --compare the unadapted baseline beside it.

    Example: bertkit adapt --task ner --data bc5cdr --task-text ner:bc5cdr --compare --seeds 1,2,3
    """
    from bertkit.workflows.adapt import AdaptConfig, adapt

    flags = {k: (str(v) if isinstance(v, Path) else v) for k, v in dict(
        task=task, data=data, model=model, extend_vocab=extend_vocab,
        extend_vocab_from=extend_vocab_from,
        corpus=",".join(str(p) for p in corpus) if corpus else None, valid=valid,
        task_text=task_text, pretrain_steps=pretrain_steps, tapt_epochs=tapt_epochs,
        masking=masking, pretrain_lr=pretrain_lr, pretrain_batch_size=pretrain_batch_size,
        max_seq_length=max_seq_length, head_warmup_steps=head_warmup_steps,
        pretrain_recipe=pretrain_recipe, epochs=epochs, lr=lr, batch_size=batch_size,
        max_train_samples=max_train_samples, max_eval_samples=max_eval_samples,
        finetune_recipe=finetune_recipe, seed=seed, seeds=seeds, compare=compare, device=device,
        precision=precision, cache_dir=cache_dir, output_dir=output_dir,
        overwrite=overwrite).items()}
    built = build_settings(AdaptConfig, "adapt", flags=flags, recipe=recipe)
    console = make_console()
    console.print(built.line(), highlight=False, markup=False)
    adapt(built.config, console)
