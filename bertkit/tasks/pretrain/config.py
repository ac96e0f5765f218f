"""``bertkit pretrain`` settings."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bertkit.errors import BertkitError
from bertkit.masking import CHOICES as MASKING_CHOICES
from bertkit.masking import STRATEGIES as MASKING
from bertkit.settings.options import option
from bertkit.training import TrainConfig


@dataclass
class PretrainConfig(TrainConfig):
    """MLM pretraining settings: the training-loop fields (steps-based here) plus these.

    Attributes:
        corpus: text file, ``.gz`` file, directory or registered corpus name (``scientific``,
            ``general``: its ``train.txt`` under ``$BERTKIT_DATA``, see
            :data:`bertkit.data.sets.CORPORA`); several separated by commas.
        valid: held-out text (or a registered corpus name: its ``valid.txt``) for validation
            MLM loss/perplexity/accuracy (token masking, masked once with a fixed seed).
        model: masked-LM or encoder to continue pretraining (None with no ``config``: the
            packaged MiniLM encoder).
        config: from-scratch size, ``tiny``, ``small``, ``base``, ``large`` or a custom
            ``layers=L,hidden=H[,heads=A,intermediate=I]``, with an optional
            ``arch=bert|modernbert|deberta-v2`` (default ``bert``; needs ``vocab``).
        dropout: hidden and attention dropout (None: the model's own, 0.1 from scratch).
        max_tokens: token budget: train for ``ceil(max_tokens / (batch_size x
            gradient_accumulation x max_seq_length))`` optimiser steps (packed sequences have
            no padding, so every token is real; with ``nsp`` padded positions count too)
            instead of ``max_steps``; None: ``max_steps``. :meth:`validate` sets ``max_steps``.
        vocab: vocabulary for a from-scratch model (a tokenizer directory, ``vocab.txt``, or a
            shipped name such as ``scivocab-uncased``).
        masking: ``token`` (BERT), ``wwm`` (whole-word) or ``span`` (SpanBERT).
        mask_prob: share of real tokens predicted (0.15).
        valid_mask_prob: share of the validation tokens masked (None: ``mask_prob``), so that a
            run trained with a higher masking rate (Wettig et al., 2023) is still validated at
            BERT's 15%, comparable with other runs.
        mask_replace_prob / random_replace_prob: the 80/10/10 rule (rest: unchanged).
        span_p / max_span_length: span lengths ~ Geo(p) truncated to 1..max (words).
        sbo: add SpanBERT's span-boundary objective (None: on for span masking, off otherwise).
        sbo_weight: weight of the SBO loss.
        nsp: train BERT's next-sentence prediction on sentence pairs (token or wwm masking; the
            model is saved as ``BertForPreTraining``).
        short_seq_prob: with NSP, chance of a shorter target pair length per document (BERT: 0.1).
        max_seq_length: tokens per packed sequence (with ``nsp``: at most per sentence pair)
            incl. ``[CLS]``/``[SEP]`` (128; 512 for a second phase).
        eval_batch_size / max_eval_sequences: validation batch size and cap.
        cache_dir: tokenised-corpus cache (default ``$BERTKIT_CACHE`` or ``~/.cache/bertkit``).
        compile: ``torch.compile`` the model's whole forward (encoder, heads, losses; CUDA).
        skip_bad_lines: drop corpus lines that are not UTF-8 (or binary) and count them,
            instead of stopping at the first one.
    """

    # each field with option(...) is also a `bertkit pretrain` option (bertkit.settings.options): its
    # help and checks are declared here once, and --help shows the default written here
    corpus: str | None = option(None, flags=("--corpus", "-c"), repeat=True, help="Text file (one "
                                "sentence a line, blank line between documents), .gz file, "
                                "directory, or a registered corpus under $BERTKIT_DATA: "
                                "scientific or general (the train.txt of corpus/ or "
                                "corpus-general/); repeatable.")
    valid: str | None = option(None, type=Path, help="Held-out text (or scientific / general: "
                               "that corpus's valid.txt): validation MLM loss, perplexity and "
                               "masked-token accuracy, logged with the tokens trained so far "
                               "(token masking, the same masks every evaluation).")
    model: str | None = option(None, flags=("--model", "-m"), shown="the packaged MiniLM "
                               "encoder", help="Continue pretraining this masked-LM or encoder "
                               "(directory or hub id).")
    config: str | None = option(None, help="Pretrain from scratch (needs --vocab): tiny, small, "
                                "base, large, or a custom size such as layers=4,hidden=256 (keys "
                                "layers, hidden, heads, intermediate; heads default to hidden/64, "
                                "intermediate to 4 x hidden, 1.5 x for ModernBERT), with an "
                                "optional arch= key: bert (the default), modernbert or deberta-v2, "
                                "e.g. arch=modernbert, layers=2, hidden=128 joined by commas.")
    vocab: str | None = option(None, help="Vocabulary of a from-scratch model: scivocab-uncased, "
                               "scivocab-cased, a tokenizer folder or vocab.txt.")
    dropout: float | None = option(None, min=0, max=0.999, shown="the model's own; 0.1 from "
                                   "scratch", help="Hidden and attention dropout (Cramming: 0 "
                                   "for a short from-scratch run).")
    max_tokens: int | None = option(None, min=1, help="Token budget: train for the optimiser "
                                    "steps of B x accumulation x sequence length tokens that "
                                    "cover N tokens, instead of --max-steps.")
    masking: str = option("span", choices=tuple(MASKING), help="token (BERT), wwm (whole-word) "
                          "or span (SpanBERT).")
    mask_prob: float = option(0.15, help="Share of real tokens to predict.")
    valid_mask_prob: float | None = option(None, shown="--mask-prob", help="Share of the --valid "
                                           "tokens masked (e.g. 0.15 while training at "
                                           "--mask-prob 0.3).")
    mask_replace_prob: float = option(0.8, help="Chosen tokens (spans) replaced by [MASK].")
    random_replace_prob: float = option(0.1, help="Chosen tokens (spans) replaced by random "
                                        "tokens.")
    span_p: float = option(0.2, help="Geometric parameter of span lengths in words.")
    max_span_length: int = option(10, min=1, help="Longest span in words.")
    sbo: bool | None = option(None, flags=("--sbo/--no-sbo",), shown="on with span masking",
                              help="SpanBERT's span-boundary objective (span masking only).")
    sbo_weight: float = option(1.0, min=0, help="Loss = MLM + weight x SBO.")
    nsp: bool = option(False, flags=("--nsp/--no-nsp",), help="BERT's next-sentence prediction "
                       "on sentence pairs (token or wwm masking; saved as BertForPreTraining).")
    short_seq_prob: float = option(0.1, min=0, max=1, help="With --nsp: chance of a shorter "
                                   "pair length per document.")
    max_seq_length: int = option(128, min=8, help="Tokens per packed sequence incl. "
                                 "[CLS]/[SEP].")
    eval_batch_size: int = option(64, min=1, help="Validation sequences per batch.")
    max_eval_sequences: int | None = option(None, min=1, help="Validate on at most N sequences.")
    cache_dir: str | None = option(None, type=Path, shown="$BERTKIT_CACHE or ~/.cache/bertkit",
                                   help="Tokenised-corpus cache.")
    compile: bool = option(False, flags=("--compile/--no-compile",), help="torch.compile the "
                           "whole forward: encoder, MLM/SBO heads and losses (CUDA).")
    prefetch: int = option(2, min=0, help="Batches read and masked ahead of the step by a "
                           "background thread (0: none); the wait is logged as data_wait_share.")
    head_warmup_steps: int = option(0, min=0, help="Train only the new heads (MLM, SBO, NSP) for "
                                    "N steps with the encoder frozen; the encoder then joins "
                                    "with its own warm-up.")
    skip_bad_lines: bool = option(False, flags=("--skip-bad-lines",), help="Drop corpus (and "
                                  "--valid) lines that are not UTF-8 or binary, counted in "
                                  "results.json, instead of stopping.")
    lr: float = 1e-4
    warmup: float = 0.06
    max_steps: int = option(1000, min=1, help="Train for exactly N optimiser steps.")
    eval_steps: int = 500

    @property
    def tokens_per_step(self) -> int:
        """Tokens per optimiser step: packed sequences have no padding (NSP pairs may)."""
        return self.batch_size * self.gradient_accumulation * self.max_seq_length

    def plan_token_budget(self) -> None:
        """With ``max_tokens``, set ``max_steps`` to the steps that budget takes (rounded up),
        so the warm-up and decay schedule spans the budget."""
        if self.max_tokens is not None and self.max_tokens >= 1:
            self.max_steps = max(1, math.ceil(self.max_tokens / self.tokens_per_step))

    @property
    def use_sbo(self) -> bool:
        return self.spans if self.sbo is None else self.sbo

    @property
    def spans(self) -> bool:
        """The masking gives spans (and SBO boundaries): decided by the strategy itself."""
        return self.masking in MASKING and MASKING[self.masking].spans

    def validate(self) -> None:
        """Check every setting before anything is loaded or written; with ``max_tokens``, set
        ``max_steps`` (:meth:`plan_token_budget`).

        Raises:
            BertkitError: naming the option at fault and what it must be.
        """
        super().validate()
        if not self.corpus:
            from bertkit.data.sets import corpus_names

            raise BertkitError("no --corpus given",
                               expected=f"a text file, .gz file, directory or a registered "
                                        f"corpus: {corpus_names()}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise BertkitError(f"--max-tokens is {self.max_tokens}", expected="an integer >= 1")
        self.plan_token_budget()
        if self.max_steps < 1:
            raise BertkitError(f"--max-steps is {self.max_steps}", expected="an integer >= 1")
        if self.model and self.config:
            raise BertkitError("--model (continue pretraining) and --config (from scratch) "
                               "exclude each other", expected="one of them")
        if self.config:
            from bertkit.tasks.pretrain.model import parse_size

            parse_size(self.config)  # an unknown or malformed size fails before any loading
        if self.config and not self.vocab:
            raise BertkitError(f"--config {self.config} needs --vocab",
                               expected="a vocabulary (e.g. scivocab-uncased or a tokenizer folder)")
        if self.vocab and not self.config:
            raise BertkitError("--vocab is only for a model built from scratch (--config)",
                               expected="--config tiny|small|base|large|layers=L,hidden=H, or "
                                        "`bertkit vocab extend` to add words to a model's "
                                        "vocabulary")
        if self.masking not in MASKING:
            raise BertkitError(f"unknown --masking '{self.masking}'", expected=MASKING_CHOICES)
        if self.sbo and not self.spans:
            raise BertkitError(f"--sbo needs span masking (got --masking {self.masking})",
                               expected="--masking span, or --no-sbo")
        if self.nsp and (self.spans or self.sbo):
            raise BertkitError(f"--nsp does not go with span masking / SBO (got --masking "
                               f"{self.masking}{', --sbo' if self.sbo else ''}): SpanBERT "
                               f"dropped NSP", expected="--masking token or wwm with --nsp, "
                                                        "or --no-nsp")
        self.require((
            ("mask_prob", 0 < self.mask_prob < 1, "a number in (0, 1)"),
            ("valid_mask_prob", self.valid_mask_prob is None or 0 < self.valid_mask_prob < 1,
             "a number in (0, 1)"),
            ("dropout", self.dropout is None or 0 <= self.dropout < 1, "a number in [0, 1)"),
            ("mask_replace_prob", 0 <= self.mask_replace_prob <= 1, "a number in [0, 1]"),
            ("random_replace_prob", 0 <= self.random_replace_prob
             <= 1 - self.mask_replace_prob, "a number in [0, 1 - mask_replace_prob]"),
            ("span_p", 0 < self.span_p <= 1, "a number in (0, 1]"),
            ("max_span_length", self.max_span_length >= 1, "an integer >= 1"),
            ("sbo_weight", self.sbo_weight >= 0, "a number >= 0"),
            ("short_seq_prob", 0 <= self.short_seq_prob <= 1, "a number in [0, 1]"),
            ("max_seq_length", 8 <= self.max_seq_length, "an integer >= 8"),
            ("eval_batch_size", self.eval_batch_size >= 1, "an integer >= 1"),
            ("max_eval_sequences", (self.max_eval_sequences or 1) >= 1, "an integer >= 1"),
            ("prefetch", self.prefetch >= 0, "an integer >= 0"),
            ("head_warmup_steps", 0 <= self.head_warmup_steps < self.max_steps,
             "an integer >= 0, below --max-steps")))
