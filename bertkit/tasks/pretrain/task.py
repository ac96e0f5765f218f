"""``bertkit pretrain`` as an importable function: :func:`pretrain`.

Continued (domain-adaptive) pretraining from a checkpoint, as BioBERT and SciBERT-basevocab did,
or pretraining from scratch with a new vocabulary, as SciBERT-scivocab did (Beltagy et al., 2019,
sec. 2-3), with BERT token masking, whole-word masking or SpanBERT span masking + SBO, and
optionally BERT's next-sentence prediction (``nsp``) on sentence pairs.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

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
from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus
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


def pretrain(cfg: PretrainConfig, console: Console | None = None) -> dict:
    """Run MLM pretraining and write the run directory.

    Writes ``config.yaml``, ``metrics.jsonl`` (training ``loss``/``mlm_loss``/``sbo_loss``/``nsp_loss`` and
    validation records), ``results.json`` and ``model/`` (``AutoModelForMaskedLM`` format,
    tokenizer, ``sbo.safetensors``, ``bertkit.json``) under ``cfg.output_dir``.

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad corpus, model, vocabulary, settings or output directory.
    """
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
    runtime = make_runtime(cfg.device, cfg.precision, console)
    tokenizer = _tokenizer(cfg)
    if not cfg.config:  # continued pretraining: the model folder's tokenizer must be its own
        from bertkit.vocab.match import check_tokenizer_matches

        check_tokenizer_matches(cfg.model, tokenizer)
        attention_note(cfg.model)  # an unsupported family stops here, before any tokenising
    with main_process_first(runtime.device):  # one process tokenises, the others read its cache
        stream = tokenize_corpus(_paths(cfg.corpus), tokenizer, cfg.cache_dir,
                                 console if is_main_process() else None, cfg.skip_bad_lines)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    sequences = PackedSequences(stream, cfg.max_seq_length, cls_id, sep_id)
    if len(sequences) == 0 and not cfg.nsp:
        raise BertkitError(f"the corpus has {len(stream.ids)} tokens, fewer than one sequence of "
                           f"{cfg.max_seq_length}", file=_paths(cfg.corpus)[0],
                           expected="more text or a smaller --max-seq-length")
    vocab = VocabInfo.from_tokenizer(tokenizer, stream.unigram)
    masker = build_masker(cfg.masking, vocab, cfg.mask_prob, cfg.mask_replace_prob,
                          cfg.random_replace_prob, cfg.span_p, cfg.max_span_length)
    pairs, n_pairs, n_documents, pseudo, lines_cut = None, 0, stream.documents, False, 0
    if cfg.nsp:
        if tokenizer.pad_token_id is None:
            raise BertkitError("--nsp pads sentence pairs but the tokenizer has no [PAD] token",
                               expected="a BERT-style vocabulary with [PAD]")
        documents, pseudo = stream_documents(stream, PSEUDO_DOCUMENT_SENTENCES)
        half = (cfg.max_seq_length - 3) // 2  # a line longer than half a pair: a paragraph?
        ends = [i for i in tokenizer.convert_tokens_to_ids([".", "!", "?"])
                if i is not None and i != tokenizer.unk_token_id]
        documents, lines_cut = split_long_sentences(documents, half, ends)
        if lines_cut and console is not None:
            console.print(f"note: NSP pairs sentences: {lines_cut:,} corpus line(s) longer than "
                          f"{half} pieces (half a pair: a paragraph a line?) cut into sentences "
                          f"after '.', '!' and '?', so that pairs do not cut them off",
                          highlight=False)
        if pseudo and console is not None:
            console.print(f"[yellow]warning:[/] the corpus has {stream.documents} document(s) (no "
                          f"blank line between documents); NSP's random next segments need other "
                          f"documents, so it is cut into {len(documents):,} pseudo-documents of "
                          f"{PSEUDO_DOCUMENT_SENTENCES} consecutive sentences", highlight=False)
        pairs = NSPBatches(documents, cfg.max_seq_length, cls_id, sep_id, tokenizer.pad_token_id,
                           cfg.batch_size, masker, cfg.seed, cfg.short_seq_prob)
        n_pairs, n_documents = len(pairs.epoch(0)[0]), len(documents)
        if len(documents) < 2 or n_pairs == 0:
            raise BertkitError(f"the corpus gives no NSP sentence pairs ({len(documents)} "
                               f"document(s))", file=_paths(cfg.corpus)[0],
                               expected="documents of several sentences, one sentence a line")
    valid = None
    if cfg.valid:
        with main_process_first(runtime.device):
            vstream = tokenize_corpus(_paths(cfg.valid), tokenizer, cfg.cache_dir,
                                      console if is_main_process() else None, cfg.skip_bad_lines)
        vseq = PackedSequences(vstream, cfg.max_seq_length, cls_id, sep_id, cfg.max_eval_sequences)
        if len(vseq) == 0:
            raise BertkitError("the validation text is shorter than one sequence",
                               file=_paths(cfg.valid)[0], expected="more text")
        valid = validation_batches(vseq, cfg.eval_batch_size,
                                   TokenMasker(vocab, cfg.mask_prob if cfg.valid_mask_prob is None
                                               else cfg.valid_mask_prob, cfg.mask_replace_prob,
                                               cfg.random_replace_prob))
    seed_everything(cfg.seed)
    model, info = build_pretrain_model(cfg.model, cfg.config, tokenizer, cfg.use_sbo, cfg.sbo_weight,
                                       nsp=cfg.nsp, dropout=cfg.dropout)
    from bertkit.inputs.lengths import check_length, position_limit

    check_length(cfg.max_seq_length, position_limit(model.mlm.config), "--max-seq-length")
    model.head_warmup_steps = cfg.head_warmup_steps  # encoder frozen meanwhile (optimiser)
    if cfg.compile:  # the whole step's forward: encoder, heads and losses in one graph
        model.compile(dynamic=False)
    run_dir = prepare_run_dir(run_dir, cfg.resume, cfg.overwrite)
    main = is_main_process()  # rank 0 writes every output of a multi-process run
    if main:
        write_text(run_dir / "config.yaml", config_yaml(settings, cfg))
    else:
        console = None
    if console:
        source = cfg.model or f"new {cfg.config} {model.head.family}, vocabulary {cfg.vocab}"
        if attention_note(model.mlm.config):  # DeBERTa: its own attention, no SDPA path
            console.print(f"note: {attention_note(model.mlm.config)}", highlight=False)
        console.print(
            f"corpus: {len(stream.ids):,} tokens, {stream.documents:,} "
            f"document{'' if stream.documents == 1 else 's'} "
            f"{f'({stream.skipped_lines:,} bad lines skipped) ' if stream.skipped_lines else ''}"
            f"({'cached' if stream.cached else 'tokenised'}: {stream.path}); "
            f"{n_pairs if pairs else len(sequences):,} "
            f"{'NSP pairs (epoch 1) of up to' if pairs else 'sequences of'} {cfg.max_seq_length}; masking {cfg.masking}"
            f"{' + SBO' if cfg.use_sbo else ''}{' + NSP' if cfg.nsp else ''}; model {source} ({info['parameters']:,} parameters"
            f"{', new MLM head tied to the input embeddings' if info['new_mlm_head'] else ''}"
            f"{', new NSP head' if info['new_nsp_head'] else ''}"
            f"{', new pooler' if info['new_pooler'] else ''}"
            f"{f', dropout {cfg.dropout:g}' if cfg.dropout is not None else ''}); "
            f"{cfg.max_steps:,} steps of {cfg.tokens_per_step:,} tokens"
            f"{f' (--max-tokens {cfg.max_tokens:,})' if cfg.max_tokens else ''}; "
            f"device {runtime.device}, {runtime.precision}", highlight=False)

    def evaluate(m) -> dict:
        return evaluate_mlm(m, valid, runtime)

    initial = None
    if valid is not None and not cfg.resume and main:
        model.to(runtime.device).eval()
        initial = evaluate(model)
    batches = pairs or PretrainBatches(sequences, cfg.batch_size, masker, cfg.seed, sbo=cfg.use_sbo)
    if cfg.prefetch:  # read and mask ahead of the step; same batches, same order
        batches = Prefetcher(batches, cfg.prefetch)
    tracker = start_tracking(cfg, run_dir, settings, "pretrain", console) if main else None
    with tracker or contextlib.nullcontext():  # an error ends the MLflow run as failed
        result = train(model, batches, cfg, runtime, run_dir, evaluate=evaluate if valid else None,
                       select_metric=None, console=console, tracker=tracker)
        if not main:
            return {"task": "pretrain", "rank": rank(), "steps": result.steps}
        last = result.last_train or {}
        tokens = result.steps * cfg.batch_size * cfg.gradient_accumulation * cfg.max_seq_length
        meta = {"masking": cfg.masking, "max_seq_length": cfg.max_seq_length, "steps": result.steps,
                "base_model": cfg.model, "config": cfg.config, "vocab": cfg.vocab,
                "architecture": model.mlm.config.model_type,  # bert, modernbert, deberta-v2
                "corpus": cfg.corpus,  # provenance: the contamination check reads it
                "sbo_weight": cfg.sbo_weight if cfg.use_sbo else None, "nsp": cfg.nsp,
                "short_seq_prob": cfg.short_seq_prob if cfg.nsp else None,
                **pretrain_lineage(run_dir, cfg, result)}
        with atomic_path(run_dir / "model") as tmp:
            model.save(tmp, tokenizer, meta)
        results = {
            "task": "pretrain", "corpus": cfg.corpus, "model": cfg.model, "config": cfg.config,
            "architecture": model.mlm.config.model_type,
            "vocab": cfg.vocab, "masking": cfg.masking, "sbo": cfg.use_sbo, "nsp": cfg.nsp,
            "steps": result.steps, "dropout": cfg.dropout, "max_tokens": cfg.max_tokens,
            "train_tokens": result.train_tokens,
            "train": {k: last[k] for k in ("loss", "mlm_loss", "sbo_loss", "nsp_loss") if k in last},
            "valid": result.history[-1] if result.history else None,
            "valid_initial": initial,
            "corpus_tokens": int(len(stream.ids)),
            "skipped_lines": {"corpus": stream.skipped_lines,
                              "valid": vstream.skipped_lines if cfg.valid else 0},
            "sequences": n_pairs if pairs else len(sequences), "documents": n_documents,
            "pseudo_documents": pseudo, "nsp_lines_cut": lines_cut,
            "new_mlm_head": info["new_mlm_head"], "parameters": info["parameters"],
            "train_seconds": result.train_seconds,
            "data_wait_share": (batches.total_wait / max(batches.total_step, 1e-12)
                                if isinstance(batches, Prefetcher) and batches.total_step else None),
            "tokens_per_second": tokens / max(result.train_seconds, 1e-9),
            "device": str(runtime.device), "precision": runtime.precision,
            "torch_threads": torch.get_num_threads(),
        }
        write_json(run_dir / "results.json", results)
        from bertkit.outputs.modelcard import write_model_card

        write_model_card(run_dir / "model", results, CARD, cfg)  # model/README.md
        if tracker is not None:  # --report-to mlflow: results, curves and model card
            tracker.finish(run_dir, results)
        return results
