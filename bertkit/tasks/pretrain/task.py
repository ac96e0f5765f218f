"""``bertkit pretrain`` as an importable function: :func:`pretrain`.

Continued (domain-adaptive) pretraining from a checkpoint, as BioBERT and SciBERT-basevocab did,
or pretraining from scratch with a new vocabulary, as SciBERT-scivocab did (Beltagy et al., 2019,
sec. 2-3), with BERT token masking, whole-word masking or SpanBERT span masking + SBO, and
optionally BERT's next-sentence prediction (``nsp``) on sentence pairs.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from bertkit.settings.layers import config_yaml, field_defaults, to_dict
from bertkit.encoders import attention_note, default_model, load_tokenizer
from bertkit.errors import BertkitError
from bertkit.io import atomic_path, write_json, write_text
from bertkit.masking import TokenMasker, VocabInfo, build_masker
from bertkit.outputs.modelcard import CardSpec, Metric, pipeline_usage
from bertkit.tasks.pretrain.batches import PretrainBatches, evaluate_mlm, validation_batches
from bertkit.tasks.pretrain.config import PretrainConfig
from bertkit.tasks.pretrain.data import PackedSequences, TokenStream, tokenize_corpus
from bertkit.tasks.pretrain.model import build_pretrain_model
from bertkit.tasks.pretrain.nsp import split_long_sentences, stream_documents
from bertkit.tasks.pretrain.nsp_batches import NSPBatches
from bertkit.training import train
from bertkit.training.devices import make_runtime, seed_everything
from bertkit.training.devices import is_main_process, rank
from bertkit.training.distributed import main_process_first
from bertkit.training.prefetch import Prefetcher
from bertkit.training.rundir import check_run_dir, default_run_dir, prepare_run_dir
from bertkit.training.tracking import start_tracking


PSEUDO_DOCUMENT_SENTENCES = 64  # sentences per pseudo-document of a one-document corpus (NSP)


CARD = CardSpec(
    "pretrain", "fill-mask", "Masked language modelling", "AutoModelForMaskedLM",
    (Metric("perplexity", "perplexity", "MLM perplexity", "perplexity", scale=1.0,
            bounds=(1.0, None)),
     Metric("loss", "loss", "MLM loss (nats)", "loss", scale=1.0, bounds=(0.0, None)),
     Metric("accuracy", "accuracy", "masked-token accuracy", "accuracy")),
    pipeline_usage("fill", "fill-mask", "aspirin inhibits [MASK] aggregation ."))
"""Pretraining's model card (:mod:`bertkit.outputs.modelcard`)."""


def _paths(spec: str) -> list[str]:
    from bertkit.data.sets import split_paths

    return split_paths(spec)  # a path that exists is one path, commas and all


def _tokenizer(cfg: PretrainConfig):
    if cfg.config:
        from bertkit.vocab.registry import load_tokenizer as load_vocab

        return load_vocab(cfg.vocab)
    return load_tokenizer(cfg.model)


def pretrain_lineage(run_dir: Path, cfg: PretrainConfig, result) -> dict:
    """``{"lineage", "corpora"}`` for the saved model's ``bertkit.json``
    (:func:`bertkit.data.lineage.lineage_record`): this run (its corpora, masking, steps, tokens) on
    top of the whole lineage of the model it continued (``cfg.model``; none from scratch)."""
    from bertkit.data.lineage import corpus_list, lineage_record

    step = {"name": run_dir.name, "made_by": "pretrain", "corpus": corpus_list(cfg.corpus),
            "masking": cfg.masking, "steps": result.steps,
            "train_tokens": getattr(result, "train_tokens", None)}
    return lineage_record(step, None if cfg.config else cfg.model)  # --config: new weights


@dataclass
class PretrainData:
    """What the corpus step gives the rest of the run.

    Attributes:
        stream: the tokenised corpus.
        sequences: its packed ``[CLS] ... [SEP]`` sequences of ``max_seq_length`` pieces.
        vocab: the vocabulary facts the maskers read (special ids, unigram counts).
        masker: the training masker (token, whole-word or span, :mod:`bertkit.masking`).
        pairs: ``--nsp``'s sentence-pair batches (BERT §3.1 task 2), else None.
        n_pairs / n_documents: NSP pairs of epoch 1 and the documents they come from.
        pseudo: the corpus had one document and was cut into pseudo-documents.
        lines_cut: corpus lines longer than half a pair cut into sentences (NSP).
        valid: the validation batches (``--valid``), else None.
        valid_skipped: bad lines skipped in the validation text.
    """

    stream: TokenStream
    sequences: PackedSequences
    vocab: VocabInfo
    masker: Any
    pairs: NSPBatches | None = None
    n_pairs: int = 0
    n_documents: int = 0
    pseudo: bool = False
    lines_cut: int = 0
    valid: Any = None
    valid_skipped: int = 0

    @property
    def n_sequences(self) -> int:
        """Training sequences: NSP pairs of epoch 1, else packed sequences."""
        return self.n_pairs if self.pairs else len(self.sequences)


def pretrain(cfg: PretrainConfig, console: Console | None = None) -> dict:
    """Run MLM pretraining and write the run directory.

    The steps: settings (checks, corpora, run directory), tokenizer, corpus and masking (plus
    NSP pairs and the validation batches), model, then train and save.

    Writes ``config.yaml``, ``metrics.jsonl`` (training ``loss``/``mlm_loss``/``sbo_loss``/``nsp_loss`` and
    validation records), ``results.json`` and ``model/`` (``AutoModelForMaskedLM`` format,
    tokenizer, ``sbo.safetensors``, ``bertkit.json``) under ``cfg.output_dir``.

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad corpus, model, vocabulary, settings or output directory.
    """
    run_dir, settings = _settings(cfg)
    runtime = make_runtime(cfg.device, cfg.precision, console)
    tokenizer = _checked_tokenizer(cfg)
    data = _corpus(cfg, tokenizer, runtime, console)
    seed_everything(cfg.seed)
    model, info = _model(cfg, tokenizer)
    run_dir = prepare_run_dir(run_dir, cfg.resume, cfg.overwrite)
    main = is_main_process()  # rank 0 writes every output of a multi-process run
    if main:
        write_text(run_dir / "config.yaml", config_yaml(settings, cfg))
    else:
        console = None
    if console:
        _describe(cfg, data, model, info, runtime, console)
    return _train_and_save(cfg, run_dir, settings, data, model, tokenizer, info, runtime, console)


def _settings(cfg: PretrainConfig) -> tuple[Path, dict]:
    """Check the settings, resolve registered corpora and the default model, and check the run
    directory (nothing written yet): ``(run directory, settings for config.yaml)``."""
    cfg.validate()
    from bertkit.data.sets import resolve_corpus

    cfg.corpus = resolve_corpus(cfg.corpus, "train")  # registered names -> files
    cfg.valid = resolve_corpus(cfg.valid, "valid") if cfg.valid else cfg.valid
    if not cfg.config and not cfg.model:
        cfg.model = default_model()
    run_dir = Path(cfg.output_dir) if cfg.output_dir else default_run_dir("pretrain", _paths(cfg.corpus)[0])
    cfg.output_dir = str(run_dir)
    settings = {**to_dict(cfg), "sbo": cfg.use_sbo}
    check_run_dir(run_dir, cfg.resume, cfg.overwrite, settings, field_defaults(cfg),
                  command="pretrain")
    return run_dir, settings


def _checked_tokenizer(cfg: PretrainConfig):
    """The run's tokenizer; continued pretraining checks it is the model folder's own and that
    the model's family is supported, before any tokenising."""
    tokenizer = _tokenizer(cfg)
    if not cfg.config:  # continued pretraining: the model folder's tokenizer must be its own
        from bertkit.vocab.match import check_tokenizer_matches

        check_tokenizer_matches(cfg.model, tokenizer)
        attention_note(cfg.model)  # an unsupported family stops here, before any tokenising
    return tokenizer


def _tokenized(paths: str, tokenizer, cfg: PretrainConfig, runtime, console: Console | None
               ) -> TokenStream:
    """The corpus at ``paths`` tokenised (cached); one process tokenises, the others read its
    cache."""
    with main_process_first(runtime.device):
        return tokenize_corpus(_paths(paths), tokenizer, cfg.cache_dir,
                               console if is_main_process() else None, cfg.skip_bad_lines)


def _corpus(cfg: PretrainConfig, tokenizer, runtime, console: Console | None) -> PretrainData:
    """Tokenise and pack the corpus, build the masker, and with ``--nsp`` the sentence pairs and
    with ``--valid`` the validation batches.

    Raises:
        BertkitError: a corpus shorter than one sequence (without ``--nsp``).
    """
    stream = _tokenized(cfg.corpus, tokenizer, cfg, runtime, console)
    sequences = PackedSequences(stream, cfg.max_seq_length, tokenizer.cls_token_id,
                                tokenizer.sep_token_id)
    if len(sequences) == 0 and not cfg.nsp:
        raise BertkitError(f"the corpus has {len(stream.ids)} tokens, fewer than one sequence of "
                           f"{cfg.max_seq_length}", file=_paths(cfg.corpus)[0],
                           expected="more text or a smaller --max-seq-length")
    vocab = VocabInfo.from_tokenizer(tokenizer, stream.unigram)
    masker = build_masker(cfg.masking, vocab, cfg.mask_prob, cfg.mask_replace_prob,
                          cfg.random_replace_prob, cfg.span_p, cfg.max_span_length)
    data = PretrainData(stream, sequences, vocab, masker, n_documents=stream.documents)
    if cfg.nsp:
        _nsp_pairs(cfg, tokenizer, data, console)
    if cfg.valid:
        _validation(cfg, tokenizer, runtime, data, console)
    return data


def _nsp_pairs(cfg: PretrainConfig, tokenizer, data: PretrainData, console: Console | None
               ) -> None:
    """``--nsp``: the corpus's documents (pseudo-documents of a one-document corpus), long lines
    cut into sentences, and the sentence-pair batches (BERT §3.1 task 2), set on ``data``.

    Raises:
        BertkitError: a tokenizer without ``[PAD]``, or a corpus that gives no pairs.
    """
    if tokenizer.pad_token_id is None:
        raise BertkitError("--nsp pads sentence pairs but the tokenizer has no [PAD] token",
                           expected="a BERT-style vocabulary with [PAD]")
    stream = data.stream
    documents, data.pseudo = stream_documents(stream, PSEUDO_DOCUMENT_SENTENCES)
    half = (cfg.max_seq_length - 3) // 2  # a line longer than half a pair: a paragraph?
    ends = [i for i in tokenizer.convert_tokens_to_ids([".", "!", "?"])
            if i is not None and i != tokenizer.unk_token_id]
    documents, data.lines_cut = split_long_sentences(documents, half, ends)
    if data.lines_cut and console is not None:
        console.print(f"note: NSP pairs sentences: {data.lines_cut:,} corpus line(s) longer than "
                      f"{half} pieces (half a pair: a paragraph a line?) cut into sentences "
                      f"after '.', '!' and '?', so that pairs do not cut them off",
                      highlight=False)
    if data.pseudo and console is not None:
        console.print(f"[yellow]warning:[/] the corpus has {stream.documents} document(s) (no "
                      f"blank line between documents); NSP's random next segments need other "
                      f"documents, so it is cut into {len(documents):,} pseudo-documents of "
                      f"{PSEUDO_DOCUMENT_SENTENCES} consecutive sentences", highlight=False)
    data.pairs = NSPBatches(documents, cfg.max_seq_length, tokenizer.cls_token_id,
                            tokenizer.sep_token_id, tokenizer.pad_token_id, cfg.batch_size,
                            data.masker, cfg.seed, cfg.short_seq_prob)
    data.n_pairs, data.n_documents = len(data.pairs.epoch(0)[0]), len(documents)
    if len(documents) < 2 or data.n_pairs == 0:
        raise BertkitError(f"the corpus gives no NSP sentence pairs ({len(documents)} "
                           f"document(s))", file=_paths(cfg.corpus)[0],
                           expected="documents of several sentences, one sentence a line")


def _validation(cfg: PretrainConfig, tokenizer, runtime, data: PretrainData,
                console: Console | None) -> None:
    """``--valid``: the validation text packed (at most ``max_eval_sequences``) and masked with
    BERT token masking at ``valid_mask_prob``, set on ``data``.

    Raises:
        BertkitError: validation text shorter than one sequence.
    """
    vstream = _tokenized(cfg.valid, tokenizer, cfg, runtime, console)
    vseq = PackedSequences(vstream, cfg.max_seq_length, tokenizer.cls_token_id,
                           tokenizer.sep_token_id, cfg.max_eval_sequences)
    if len(vseq) == 0:
        raise BertkitError("the validation text is shorter than one sequence",
                           file=_paths(cfg.valid)[0], expected="more text")
    data.valid = validation_batches(vseq, cfg.eval_batch_size,
                                    TokenMasker(data.vocab, cfg.mask_prob
                                                if cfg.valid_mask_prob is None
                                                else cfg.valid_mask_prob, cfg.mask_replace_prob,
                                                cfg.random_replace_prob))
    data.valid_skipped = vstream.skipped_lines


def _model(cfg: PretrainConfig, tokenizer):
    """The model to pretrain (continued from ``cfg.model`` or new from ``cfg.config``), its
    length checked against its positions, head warm-up set, compiled with ``--compile``:
    ``(model, info)``.

    Raises:
        BertkitError: a model that cannot be loaded or built, or ``max_seq_length`` over its
            positions.
    """
    model, info = build_pretrain_model(cfg.model, cfg.config, tokenizer, cfg.use_sbo, cfg.sbo_weight,
                                       nsp=cfg.nsp, dropout=cfg.dropout)
    from bertkit.inputs.lengths import check_length, position_limit

    check_length(cfg.max_seq_length, position_limit(model.mlm.config), "--max-seq-length")
    model.head_warmup_steps = cfg.head_warmup_steps  # encoder frozen meanwhile (optimiser)
    if cfg.compile:  # the whole step's forward: encoder, heads and losses in one graph
        model.compile(dynamic=False)
    return model, info


def _describe(cfg: PretrainConfig, data: PretrainData, model, info: dict, runtime,
              console: Console) -> None:
    """The line printed before training: corpus, sequences, masking, model, steps, device."""
    stream, pairs = data.stream, data.pairs
    source = cfg.model or f"new {cfg.config} {model.head.family}, vocabulary {cfg.vocab}"
    if attention_note(model.mlm.config):  # DeBERTa: its own attention, no SDPA path
        console.print(f"note: {attention_note(model.mlm.config)}", highlight=False)
    console.print(
        f"corpus: {len(stream.ids):,} tokens, {stream.documents:,} "
        f"document{'' if stream.documents == 1 else 's'} "
        f"{f'({stream.skipped_lines:,} bad lines skipped) ' if stream.skipped_lines else ''}"
        f"({'cached' if stream.cached else 'tokenised'}: {stream.path}); "
        f"{data.n_sequences:,} "
        f"{'NSP pairs (epoch 1) of up to' if pairs else 'sequences of'} {cfg.max_seq_length}; masking {cfg.masking}"
        f"{' + SBO' if cfg.use_sbo else ''}{' + NSP' if cfg.nsp else ''}; model {source} ({info['parameters']:,} parameters"
        f"{', new MLM head tied to the input embeddings' if info['new_mlm_head'] else ''}"
        f"{', new NSP head' if info['new_nsp_head'] else ''}"
        f"{', new pooler' if info['new_pooler'] else ''}"
        f"{f', dropout {cfg.dropout:g}' if cfg.dropout is not None else ''}); "
        f"{cfg.max_steps:,} steps of {cfg.tokens_per_step:,} tokens"
        f"{f' (--max-tokens {cfg.max_tokens:,})' if cfg.max_tokens else ''}; "
        f"device {runtime.device}, {runtime.precision}", highlight=False)


def _train_and_save(cfg: PretrainConfig, run_dir: Path, settings: dict, data: PretrainData,
                    model, tokenizer, info: dict, runtime, console: Console | None) -> dict:
    """Score validation before training (a fresh run), train, then on rank 0 save ``model/``,
    ``results.json`` and the model card, inside the tracking run (an error ends it as failed).

    Returns:
        the results (other ranks: their rank and steps).
    """
    main = is_main_process()

    def evaluate(m) -> dict:
        return evaluate_mlm(m, data.valid, runtime)

    initial = None
    if data.valid is not None and not cfg.resume and main:
        model.to(runtime.device).eval()
        initial = evaluate(model)
    batches = data.pairs or PretrainBatches(data.sequences, cfg.batch_size, data.masker, cfg.seed,
                                            sbo=cfg.use_sbo)
    if cfg.prefetch:  # read and mask ahead of the step; same batches, same order
        batches = Prefetcher(batches, cfg.prefetch)
    tracker = start_tracking(cfg, run_dir, settings, "pretrain", console) if main else None
    with tracker or contextlib.nullcontext():  # an error ends the MLflow run as failed
        result = train(model, batches, cfg, runtime, run_dir,
                       evaluate=evaluate if data.valid else None, select_metric=None,
                       console=console, tracker=tracker)
        if not main:
            return {"task": "pretrain", "rank": rank(), "steps": result.steps}
        _save_model(cfg, run_dir, model, tokenizer, result)
        results = _results(cfg, data, model, info, result, runtime, batches, initial)
        write_json(run_dir / "results.json", results)
        from bertkit.outputs.modelcard import write_model_card

        write_model_card(run_dir / "model", results, CARD, cfg)  # model/README.md
        if tracker is not None:  # --report-to mlflow: results, curves and model card
            tracker.finish(run_dir, results)
        return results


def _save_model(cfg: PretrainConfig, run_dir: Path, model, tokenizer, result) -> None:
    """``model/`` (written atomically) with its ``bertkit.json``: masking, steps, provenance."""
    meta = {"masking": cfg.masking, "max_seq_length": cfg.max_seq_length, "steps": result.steps,
            "base_model": cfg.model, "config": cfg.config, "vocab": cfg.vocab,
            "architecture": model.mlm.config.model_type,  # bert, modernbert, deberta-v2
            "corpus": cfg.corpus,  # provenance: the contamination check reads it
            "sbo_weight": cfg.sbo_weight if cfg.use_sbo else None, "nsp": cfg.nsp,
            "short_seq_prob": cfg.short_seq_prob if cfg.nsp else None,
            **pretrain_lineage(run_dir, cfg, result)}
    with atomic_path(run_dir / "model") as tmp:
        model.save(tmp, tokenizer, meta)


def _results(cfg: PretrainConfig, data: PretrainData, model, info: dict, result, runtime,
             batches, initial: dict | None) -> dict:
    """``results.json``: the run's settings, losses, validation (before and after), sizes and
    speed (``tokens_per_second``: optimiser steps x batch x accumulation x sequence length per
    training second)."""
    last = result.last_train or {}
    tokens = result.steps * cfg.batch_size * cfg.gradient_accumulation * cfg.max_seq_length
    return {
        "task": "pretrain", "corpus": cfg.corpus, "model": cfg.model, "config": cfg.config,
        "architecture": model.mlm.config.model_type,
        "vocab": cfg.vocab, "masking": cfg.masking, "sbo": cfg.use_sbo, "nsp": cfg.nsp,
        "steps": result.steps, "dropout": cfg.dropout, "max_tokens": cfg.max_tokens,
        "train_tokens": result.train_tokens,
        "train": {k: last[k] for k in ("loss", "mlm_loss", "sbo_loss", "nsp_loss") if k in last},
        "valid": result.history[-1] if result.history else None,
        "valid_initial": initial,
        "corpus_tokens": int(len(data.stream.ids)),
        "skipped_lines": {"corpus": data.stream.skipped_lines, "valid": data.valid_skipped},
        "sequences": data.n_sequences, "documents": data.n_documents,
        "pseudo_documents": data.pseudo, "nsp_lines_cut": data.lines_cut,
        "new_mlm_head": info["new_mlm_head"], "parameters": info["parameters"],
        "train_seconds": result.train_seconds,
        "data_wait_share": (batches.total_wait / max(batches.total_step, 1e-12)
                            if isinstance(batches, Prefetcher) and batches.total_step else None),
        "tokens_per_second": tokens / max(result.train_seconds, 1e-9),
        "device": str(runtime.device), "precision": runtime.precision,
        "torch_threads": torch.get_num_threads(),
    }
