"""``bertkit pretrain``: thin wrapper over :func:`bertkit.tasks.pretrain.pretrain`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from bertkit.cli import _options as opt
from bertkit.cli._app import app, make_console, user_errors
from bertkit.settings import build_settings


@app.command("pretrain")
@user_errors
@opt.training_options(exclude=("epochs",), lr=1e-4, warmup=0.06, max_steps=1000,
                      eval_steps=500)
def pretrain_cli(
    corpus: Annotated[Optional[List[Path]], typer.Option("--corpus", "-c", help="Text file (one sentence a line, blank line between documents), .gz file, directory, or a registered corpus under $BERTKIT_DATA: scientific or general (the train.txt of corpus/ or corpus-general/); repeatable.")] = None,
    valid: Annotated[Optional[Path], typer.Option("--valid", help="Held-out text (or scientific / general: that corpus's valid.txt): validation MLM loss, perplexity and masked-token accuracy, logged with the tokens trained so far (token masking, the same masks every evaluation).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Continue pretraining this masked-LM or encoder (directory or hub id). \\[default: the packaged MiniLM encoder]")] = None,
    config: Annotated[Optional[str], typer.Option("--config", help="Pretrain from scratch (needs --vocab): tiny, small, base, large, or a custom size such as layers=4,hidden=256 (keys layers, hidden, heads, intermediate; heads default to hidden/64, intermediate to 4 x hidden).")] = None,
    dropout: Annotated[Optional[float], typer.Option("--dropout", help="Hidden and attention dropout (Cramming: 0 for a short from-scratch run). \\[default: the model's own; 0.1 from scratch]", min=0, max=0.999)] = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", help="Token budget: train for the optimiser steps of B x accumulation x sequence length tokens that cover N tokens, instead of --max-steps.", min=1)] = None,
    vocab: Annotated[Optional[str], typer.Option("--vocab", help="Vocabulary of a from-scratch model: scivocab-uncased, scivocab-cased, a tokenizer folder or vocab.txt.")] = None,
    masking: Annotated[Optional[opt.Masking], typer.Option("--masking", help="token (BERT), wwm (whole-word) or span (SpanBERT). \\[default: span]")] = None,
    mask_prob: Annotated[Optional[float], typer.Option("--mask-prob", help="Share of real tokens to predict. \\[default: 0.15]")] = None,
    valid_mask_prob: Annotated[Optional[float], typer.Option("--valid-mask-prob", help="Share of the --valid tokens masked (e.g. 0.15 while training at --mask-prob 0.3). \\[default: --mask-prob]")] = None,
    mask_replace_prob: Annotated[Optional[float], typer.Option("--mask-replace-prob", help="Chosen tokens (spans) replaced by [MASK]. \\[default: 0.8]")] = None,
    random_replace_prob: Annotated[Optional[float], typer.Option("--random-replace-prob", help="Chosen tokens (spans) replaced by random tokens. \\[default: 0.1]")] = None,
    span_p: Annotated[Optional[float], typer.Option("--span-p", help="Geometric parameter of span lengths in words. \\[default: 0.2]")] = None,
    max_span_length: Annotated[Optional[int], typer.Option("--max-span-length", help="Longest span in words. \\[default: 10]", min=1)] = None,
    sbo: Annotated[Optional[bool], typer.Option("--sbo/--no-sbo", help="SpanBERT's span-boundary objective (span masking only). \\[default: on with span masking]")] = None,
    sbo_weight: Annotated[Optional[float], typer.Option("--sbo-weight", help="Loss = MLM + weight x SBO. \\[default: 1.0]", min=0)] = None,
    nsp: Annotated[Optional[bool], typer.Option("--nsp/--no-nsp", help="BERT's next-sentence prediction on sentence pairs (token or wwm masking; saved as BertForPreTraining). \\[default: no-nsp]")] = None,
    short_seq_prob: Annotated[Optional[float], typer.Option("--short-seq-prob", help="With --nsp: chance of a shorter pair length per document. \\[default: 0.1]", min=0, max=1)] = None,
    max_seq_length: Annotated[Optional[int], typer.Option("--max-seq-length", help="Tokens per packed sequence incl. [CLS]/[SEP]. \\[default: 128]", min=8)] = None,
    eval_batch_size: Annotated[Optional[int], typer.Option("--eval-batch-size", help="Validation sequences per batch. \\[default: 64]", min=1)] = None,
    max_eval_sequences: Annotated[Optional[int], typer.Option("--max-eval-sequences", help="Validate on at most N sequences.", min=1)] = None,
    cache_dir: Annotated[Optional[Path], typer.Option("--cache-dir", help="Tokenised-corpus cache. \\[default: $BERTKIT_CACHE or ~/.cache/bertkit]")] = None,
    compile: Annotated[Optional[bool], typer.Option("--compile/--no-compile", help="torch.compile the encoder (CUDA). \\[default: no-compile]")] = None,
    head_warmup_steps: Annotated[Optional[int], typer.Option("--head-warmup-steps", help="Train only the new heads (MLM, SBO, NSP) for N steps with the encoder frozen; the encoder then joins with its own warm-up. \\[default: 0]", min=0)] = None,
    prefetch: Annotated[Optional[int], typer.Option("--prefetch", help="Batches read and masked ahead of the step by a background thread (0: none); the wait is logged as data_wait_share. \\[default: 2]", min=0)] = None,
    skip_bad_lines: Annotated[Optional[bool], typer.Option("--skip-bad-lines", help="Drop corpus (and --valid) lines that are not UTF-8 or binary, counted in results.json, instead of stopping.")] = None,
    recipe: opt.Recipe = None,
    train_flags: dict | None = None,
) -> None:
    """MLM pretraining: continue from a model (domain adaptation) or start from scratch.

    Masking: token (BERT), wwm (whole words) or span (SpanBERT, with the span-boundary
    objective); --nsp adds BERT's next-sentence prediction on sentence pairs. Writes a run directory: config.yaml, metrics.jsonl, results.json and model/
    (loadable with AutoModelForMaskedLM and pipeline("fill-mask"); usable as --model for
    `bertkit finetune`).
    """
    from bertkit.tasks.pretrain import PretrainConfig, pretrain
    from bertkit.training.devices import is_main_process

    flags = opt.train_options(
        train_flags, corpus=",".join(str(p) for p in corpus) if corpus else None, valid=valid, model=model,
        config=config, vocab=vocab, dropout=dropout, max_tokens=max_tokens, masking=masking, mask_prob=mask_prob,
        valid_mask_prob=valid_mask_prob, mask_replace_prob=mask_replace_prob, random_replace_prob=random_replace_prob,
        span_p=span_p, max_span_length=max_span_length, sbo=sbo, sbo_weight=sbo_weight,
        nsp=nsp, short_seq_prob=short_seq_prob, max_seq_length=max_seq_length,
        eval_batch_size=eval_batch_size, max_eval_sequences=max_eval_sequences,
        cache_dir=cache_dir, compile=compile, skip_bad_lines=skip_bad_lines, prefetch=prefetch,
        head_warmup_steps=head_warmup_steps)
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
