"""``finetune ner``, ``evaluate ner`` and ``predict ner`` as importable functions.

The CLI in ``bertkit/cli`` is a thin wrapper over :func:`finetune_ner`, :func:`evaluate_ner` and
:func:`predict_ner`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import numpy as np
from rich.console import Console

from bertkit.config import dump_yaml, to_dict
from bertkit.data.conll import Sentence, format_conll, looks_like_conll, read_conll, read_text
from bertkit.data.tagging import iob2_label_set
from bertkit.encoders import default_model, load_tokenizer, resolve_model_source
from bertkit.data.sets import canonical_data
from bertkit.errors import BertkitError
from bertkit.inference import run_batches, sorted_batches
from bertkit.io import atomic_path, write_json, write_text
from bertkit.metrics.ner import entity_scores
from bertkit.packing import Packer
from bertkit.tasks.ner.config import NERConfig
from bertkit.tasks.ner.data import entity_types, load_ner_data, unseen_labels
from bertkit.tasks.ner.encoding import WindowBatches, collate, encode
from bertkit.tasks.ner.model import TokenTagger, build_tagger, load_tagger
from bertkit.tasks.ner.spans import sentence_spans
from bertkit.training import train
from bertkit.training.devices import Runtime, is_main_process, make_runtime, rank, seed_everything
from bertkit.training.rundir import check_run_dir, default_run_dir, prepare_run_dir


def tag_sentences(tagger: TokenTagger, tokenizer, sentences: Sequence[Sentence], runtime: Runtime,
                  max_length: int, batch_size: int = 32, console: Console | None = None,
                  windows: list | None = None) -> list[list[str]]:
    """Predict IOB2 tags for every word of every sentence (one tag per input word, always).

    Windows are sorted by length so each batch is padded only to its own longest window; on a
    multi-core CPU two batches run at once (:func:`bertkit.inference.run_batches`).

    Args:
        windows: the sentences already encoded with :func:`encode` (reused across epochs).
    """
    if windows is None:
        label2id = {lab: i for i, lab in enumerate(tagger.labels)}
        windows, report = encode(sentences, tokenizer, label2id, max_length)
        report.warn(sentences, console)
    lengths = np.asarray([len(w.input_ids) for w in windows])
    out = [np.zeros(len(s.tokens), dtype=np.int64) for s in sentences]
    tagger.eval()
    tagger.to(runtime.device)

    def predict(idx: np.ndarray) -> None:
        batch = runtime.to_device(collate([windows[i] for i in idx], tokenizer.pad_token_id))
        with runtime.autocast():
            pred = tagger.decode(**batch).cpu().numpy()
        for row, i in enumerate(idx):
            w = windows[i]
            out[w.sentence][w.word_index] = pred[row, :len(w.word_index)]

    run_batches(predict, sorted_batches(lengths, batch_size), runtime.device)
    labels = np.asarray(tagger.labels, dtype=object)
    return [labels[p].tolist() for p in out]


def _set_packing(tagger: TokenTagger, cfg: NERConfig, console: Console | None) -> bool:
    """Give ``tagger`` a packer if ``cfg.pack`` and the architecture allows; True if packed."""
    if not cfg.pack:
        return False
    try:
        tagger.packer = Packer(tagger.encoder.config, cfg.pack_length)
    except ValueError as exc:
        if console is not None:
            console.print(f"[yellow]note:[/] {exc}; training on length-grouped batches instead",
                          highlight=False)
        return False
    return True


def _limit(sentences: list[Sentence], n: int | None) -> list[Sentence]:
    return sentences if n is None else sentences[:n]


def finetune_ner(cfg: NERConfig, console: Console | None = None) -> dict:
    """Fine-tune, keep the best dev epoch, score test, and write the run directory.

    Writes ``config.yaml``, ``metrics.jsonl``, ``results.json``, ``test_predictions.conll`` and
    ``model/`` (Hugging Face format + ``bertkit.json``) under ``cfg.output_dir``.

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad data, model, settings or output directory.
    """
    cfg.validate()
    cfg.data = canonical_data(cfg.data)
    model_name = cfg.model or default_model()
    model_name = resolve_model_source(model_name)
    run_dir = Path(cfg.output_dir) if cfg.output_dir else default_run_dir("ner", cfg.data)
    cfg.output_dir = str(run_dir)
    settings = {**to_dict(cfg), "model": model_name}
    check_run_dir(run_dir, cfg.resume, cfg.overwrite, settings)
    runtime = make_runtime(cfg.device, cfg.precision)
    data = load_ner_data(cfg.data)
    train_s = _limit(data.splits["train"], cfg.max_train_samples)
    dev_s = _limit(data.splits["dev"], cfg.max_eval_samples)
    test_s = _limit(data.splits["test"], cfg.max_eval_samples)
    labels = iob2_label_set(sorted(entity_types(train_s)))
    if len(labels) < 2:
        raise BertkitError("the training data has no entities", file=data.sources["train"],
                           expected="B-/I- tags")
    for split, sents in (("dev", dev_s), ("test", test_s)):
        for etype, (file, line) in unseen_labels(train_s, sents).items():
            if console:
                console.print(f"[yellow]warning:[/] {file}:{line}: entity type '{etype}' occurs in "
                              f"{split} but not in train: the model cannot predict it (scored as "
                              f"missed)", highlight=False)
    seed_everything(cfg.seed)
    tokenizer = load_tokenizer(model_name)
    tagger = build_tagger(model_name, labels, cfg.crf, cfg.label_all_subwords)
    run_dir = prepare_run_dir(run_dir, cfg.resume, cfg.overwrite)
    main = is_main_process()
    if main:
        write_text(run_dir / "config.yaml", dump_yaml(settings))
    label2id = {lab: i for i, lab in enumerate(labels)}
    windows, report = encode(train_s, tokenizer, label2id, cfg.max_length, cfg.label_all_subwords)
    report.warn(train_s, console)
    if console:
        console.print(f"data: {len(train_s)}/{len(dev_s)}/{len(test_s)} sentences "
                      f"(train/dev/test), schemes {data.schemes}; labels {labels}; "
                      f"model {model_name}; device {runtime.device}, {runtime.precision}",
                      highlight=False)
    packed = _set_packing(tagger, cfg, console)
    length_group = cfg.length_group or (1 if packed else 50)
    if console:
        order = "random" if length_group == 1 else f"length-grouped ({length_group} together)"
        console.print(f"batches: {cfg.batch_size} sentences, {order}"
                      f"{f', packed into rows of >= {cfg.pack_length} tokens' if packed else ''}",
                      highlight=False)
    batches = WindowBatches(windows, cfg.batch_size, cfg.seed, tokenizer.pad_token_id,
                            sources=[f"{s.file}:{s.line}" for s in train_s],
                            length_group=length_group)

    dev_windows, _ = encode(dev_s, tokenizer, label2id, cfg.max_length)

    def evaluate_dev(model: TokenTagger) -> dict:
        pred = tag_sentences(model, tokenizer, dev_s, runtime, cfg.max_length, cfg.eval_batch_size,
                             windows=dev_windows)
        return entity_scores([s.tags for s in dev_s], pred)

    result = train(tagger, batches, cfg, runtime, run_dir, evaluate=evaluate_dev,
                   select_metric="f1", console=console if main else None)
    if not main:  # rank 0 scores test and writes every output
        return {"task": "ner", "rank": rank(), "steps": result.steps}
    test_windows, report = encode(test_s, tokenizer, label2id, cfg.max_length)
    report.warn(test_s, console)
    start = time.perf_counter()  # forward passes and decoding (as Trainer.predict on encoded data)
    test_pred = tag_sentences(tagger, tokenizer, test_s, runtime, cfg.max_length,
                              cfg.eval_batch_size, console, windows=test_windows)
    predict_seconds = time.perf_counter() - start
    test_metrics = entity_scores([s.tags for s in test_s], test_pred)
    write_text(run_dir / "test_predictions.conll", format_conll(test_s, test_pred))
    with atomic_path(run_dir / "model") as tmp:
        tagger.save(tmp, tokenizer, {"max_length": cfg.max_length, "base_model": model_name,
                                     "data": cfg.data})
    results = {
        "task": "ner", "data": cfg.data, "model": model_name,
        "best_epoch": result.best_epoch, "dev": result.best_record, "test": test_metrics,
        "train_seconds": result.train_seconds,
        "train_sentences_per_second": cfg.examples_trained(len(train_s), result.steps)
        / max(result.train_seconds, 1e-9),
        "predict_seconds": predict_seconds, "steps": result.steps,
        "scoring": "seqeval: precision/recall/f1/macro_f1 strict IOB2 mode; conlleval_* default mode",
    }
    write_json(run_dir / "results.json", results)
    return results


def evaluate_ner(model_dir: str, data: str, split: str = "test", device: str = "auto",
                 precision: str = "auto", batch_size: int = 32,
                 console: Console | None = None) -> tuple[dict, list[Sentence], list[list[str]]]:
    """Score a saved model on one split of ``data``.

    Returns:
        (metrics as in :func:`~bertkit.metrics.ner.entity_scores`, gold sentences, predictions).

    Raises:
        BertkitError: no saved model there, bad data, or an unknown split.
    """
    split = {"valid": "dev", "validation": "dev"}.get(split, split)
    if split not in ("train", "dev", "test"):
        raise BertkitError(f"unknown split '{split}'", expected="train, dev (valid) or test")
    tagger, meta = load_tagger(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    runtime = make_runtime(device, precision)
    sents = load_ner_data(data, (split,)).splits[split]
    known = {lab[2:] for lab in tagger.labels if lab != "O"}
    if console:
        for etype, (file, line) in unseen_labels(
                [Sentence(["x"], [f"B-{t}"]) for t in known], sents).items():
            console.print(f"[yellow]warning:[/] {file}:{line}: entity type '{etype}' is not among "
                          f"the model's labels (scored as missed)", highlight=False)
    pred = tag_sentences(tagger, tokenizer, sents, runtime, meta.get("max_length", 512),
                         batch_size, console)
    return entity_scores([s.tags for s in sents], pred), sents, pred


def predict_ner(model_dir: str, input_path: str, output: str | None = None, fmt: str = "conll",
                input_format: str = "auto", device: str = "auto", precision: str = "auto",
                batch_size: int = 32, console: Console | None = None) -> str:
    """Tag a CoNLL file (tokens in the first column) or plain text (one sentence a line).

    Args:
        fmt: ``conll`` (token, [gold,] predicted) or ``jsonl`` (one object a sentence with its
            input ``line``, ``tokens``, ``tags`` and ``spans``: word offsets, end exclusive, type
            and text; empty input lines give no object).
        input_format: ``auto``, ``conll`` or ``text``.
        output: file to write atomically; None returns the text only.

    Returns:
        the formatted predictions.

    Raises:
        BertkitError: bad input file, unknown format, or no saved model.
    """
    if fmt not in ("conll", "jsonl"):
        raise BertkitError(f"unknown output format '{fmt}'", expected="conll or jsonl")
    if input_format not in ("auto", "conll", "text"):
        raise BertkitError(f"unknown input format '{input_format}'", expected="auto, conll or text")
    tagger, meta = load_tagger(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    runtime = make_runtime(device, precision)
    pre = tokenizer.backend_tokenizer.pre_tokenizer
    is_conll = looks_like_conll(input_path) if input_format == "auto" else input_format == "conll"
    if is_conll:
        sents = read_conll(input_path, labelled=False).sentences
    else:
        sents = read_text(input_path, pre.pre_tokenize_str)
    pred = tag_sentences(tagger, tokenizer, sents, runtime, meta.get("max_length", 512),
                         batch_size, console)
    if fmt == "conll":
        text = format_conll(sents, pred)
    else:
        import json

        text = "".join(json.dumps({"line": s.line, "tokens": s.tokens, "tags": p,
                                   "spans": sentence_spans(s.tokens, p)}, ensure_ascii=False) + "\n"
                       for s, p in zip(sents, pred))
    if output:
        write_text(output, text)
    return text
