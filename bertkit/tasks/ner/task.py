"""``finetune ner``, ``evaluate ner`` and ``predict ner`` as importable functions.

The CLI in ``bertkit/cli`` is a thin wrapper over :func:`finetune_ner`, :func:`evaluate_ner` and
:func:`predict_ner`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from rich.console import Console

from bertkit.data.conll import Sentence, format_conll
from bertkit.data.tagging import iob2_label_set
from bertkit.encoders import load_tokenizer
from bertkit.errors import BertkitError
from bertkit.predict.inference import run_batches, sorted_batches, token_batches
from bertkit.io import write_text
from bertkit.inputs.lengths import fit_length, position_limit
from bertkit.metrics.ner import entity_scores
from bertkit.inputs.packing import Packer, position_start
from bertkit.outputs.tables import entity_table
from bertkit.tasks.ner.config import METRICS, NERConfig
from bertkit.outputs.modelcard import CardSpec, Metric, pipeline_usage
from bertkit.tasks.base import (TaskHeader, Evaluation, Prepared, ScoredSplit, TaskData,
                                table_report, task_functions)
from bertkit.tasks.common import parse_split, warn_notes, warn_unseen
from bertkit.tasks.driver import finetune
from bertkit.tasks.ner.data import EXTENSIONS, entity_types, load_ner_data, unseen_labels
from bertkit.tasks.ner.encoding import WindowBatches, collate, encode
from bertkit.tasks.ner.model import TokenTagger, build_tagger, load_tagger
from bertkit.tasks.ner.suite import SUITE
from bertkit.training.devices import Runtime, make_runtime, world_size


def tag_sentences(tagger: TokenTagger, tokenizer, sentences: Sequence[Sentence], runtime: Runtime,
                  max_length: int, batch_size: int = 32, console: Console | None = None,
                  windows: list | None = None, max_tokens: int | None = None,
                  pack: int = 0, backend: str = "torch") -> list[list[str]]:
    """Predict IOB2 tags for every word of every sentence (one tag per input word, always).

    Windows are sorted by length so each batch is padded only to its own longest window; on a
    multi-core CPU two batches run at once (:func:`bertkit.predict.inference.run_batches`).

    Args:
        windows: the sentences already encoded with :func:`encode` (reused across epochs).
        max_tokens: batches of up to this many padded pieces instead of ``batch_size`` windows
            (:func:`bertkit.predict.inference.token_batches`); the predictions are the same.
        pack: if > 0, pack the windows of each batch into rows of at least this many pieces
            with block-diagonal attention (:class:`~bertkit.inputs.packing.Packer`; batches of
            ``max_tokens`` pieces, default 32 rows' worth); the same predictions, no padding.
        backend: ``torch``, ``onnx`` (ONNX Runtime fp32, :mod:`bertkit.predict.onnx_backend`; the
            export is cached beside the saved model) or ``onnx-int8`` (its int8 dynamic
            quantisation: NOT the same predictions; see benchmarks/README.md).

    Raises:
        BertkitError: ``onnx`` without onnxruntime installed, or an unknown backend.
    """
    _set_backend(tagger, backend, console)
    if windows is None:
        label2id = {lab: i for i, lab in enumerate(tagger.labels)}
        windows, report = encode(sentences, tokenizer, label2id, max_length)
        report.warn(sentences, console)
    lengths = np.asarray([len(w.input_ids) for w in windows])
    out = [np.zeros(len(s.tokens), dtype=np.int64) for s in sentences]
    tagger.eval()
    tagger.to(runtime.device)
    tagger.predict_packer = Packer(tagger.encoder.config, pack) if pack and \
        tagger.scorer is None and position_start(tagger.encoder.config) is not None else None
    if tagger.predict_packer is not None:
        max_tokens = max_tokens or 32 * pack

    def predict(idx: np.ndarray) -> None:
        batch = runtime.to_device(collate([windows[i] for i in idx], tokenizer.pad_token_id))
        with runtime.autocast():
            pred = tagger.decode(**batch).cpu().numpy()
        for row, i in enumerate(idx):
            w = windows[i]
            out[w.sentence][w.word_index] = pred[row, :len(w.word_index)]

    plan = token_batches(lengths, max_tokens) if max_tokens else sorted_batches(lengths,
                                                                              batch_size)
    try:
        run_batches(predict, plan, runtime.device)
    finally:
        tagger.predict_packer = None
    labels = np.asarray(tagger.labels, dtype=object)
    return [labels[p].tolist() for p in out]


BACKENDS = ("torch", "onnx", "onnx-int8")


def _set_backend(tagger: TokenTagger, backend: str, console: Console | None = None) -> None:
    """Give ``tagger`` an ONNX Runtime scorer for ``backend`` (once; torch: none); an export
    made from other weights is made again, said on ``console`` (else as a warning)."""
    if backend not in BACKENDS:
        raise BertkitError(f"unknown backend '{backend}'", expected=", ".join(BACKENDS))
    if backend == "torch":
        tagger.scorer = None
        return
    if getattr(tagger.scorer, "backend", None) == backend:
        return
    import torch

    from bertkit.predict.onnx_backend import OnnxScorer, cached_export, require_onnxruntime

    require_onnxruntime()
    source = getattr(tagger, "source", None)  # set by load_tagger; else a temporary folder
    if source is None:
        import tempfile

        source = tempfile.mkdtemp(prefix="bertkit-onnx-")
    import hashlib
    from pathlib import Path as _Path

    fallback = _Path.home() / ".cache" / "bertkit" / "onnx" / hashlib.sha1(
        str(_Path(source).resolve()).encode()).hexdigest()[:16]  # a read-only model folder
    say = None
    if console is not None:
        from rich.markup import escape

        def say(message: str) -> None:
            console.print(f"[yellow]note:[/] {escape(message)}", highlight=False)
    path = cached_export(tagger.encoder, source, fallback, say)
    tagger.scorer = OnnxScorer(path, torch.get_num_threads(), quantized=backend == "onnx-int8",
                               say=say)
    tagger.scorer.backend = backend


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


def describe_schemes(schemes: dict[str, str]) -> str:
    """The tagging schemes read, as text: ``tags IOB2`` when every split uses one scheme, else
    ``tags train IOB1, dev IOB2, test IOB2 (all read as IOB2)``.

    >>> describe_schemes({"train": "IOB2", "dev": "IOB2", "test": "IOB2"})
    'tags IOB2'
    """
    found = set(schemes.values())
    if len(found) == 1:
        only = found.pop()
        return f"tags {only}" + ("" if only == "IOB2" else " (read as IOB2)")
    return ("tags " + ", ".join(f"{split} {scheme}" for split, scheme in schemes.items())
            + " (all read as IOB2)")


CARD = CardSpec(
    "finetune ner", "token-classification", "Named-entity recognition",
    "AutoModelForTokenClassification",
    (Metric("f1", "f1", "entity F1 (seqeval, strict IOB2)", "entity F1"),
     Metric("precision", "precision", "entity precision (seqeval, strict IOB2)", "precision"),
     Metric("recall", "recall", "entity recall (seqeval, strict IOB2)", "recall")),
    pipeline_usage("ner", "token-classification", "Cisplatin induced nephrotoxicity in rats .",
                   ', aggregation_strategy="first"'),
    notes=lambda results: [
        "Use `aggregation_strategy=\"first\"` (the label of each word's first piece, as bertkit "
        "trains and decodes); bertkit's own `predict ner` decodes with the CRF or IOB2-constrained "
        "Viterbi and always returns valid IOB2."])
"""The model card (:mod:`bertkit.outputs.modelcard`); its metrics are the task's headline metrics."""


class NERTask(TaskHeader, name="ner", config_class=NERConfig,
              extensions=EXTENSIONS, unit="sentences", select_metric="f1",
              card=CARD, suite=SUITE):
    """Named-entity recognition as a :class:`~bertkit.tasks.base.Task`: IOB2 tagging of words
    (first-piece alignment as Hugging Face's ``run_ner.py``), best epoch by dev entity F1
    (seqeval strict IOB2, Tjong Kim Sang & De Meulder 2003)."""

    def load(self, cfg: NERConfig, splits: tuple[str, ...], console: Console | None = None
             ) -> TaskData:
        """Read ``splits`` of ``cfg.data`` (directory, registered name, or hub)."""
        data = load_ner_data(cfg.data, splits)
        warn_notes(data.notes, console)
        return TaskData(data.splits, data.sources, info={"schemes": data.schemes})

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """The unlabelled text of the training split of ``data`` for TAPT
        (:mod:`bertkit.workflows.task_text`): one sentence a line, tokens joined by spaces, of the first ``max_examples`` sentences (all: None)."""
        sents = load_ner_data(data, ("train",)).splits["train"][:max_examples]
        return [" ".join(s.tokens) for s in sents]

    def prepare(self, cfg: NERConfig, model_name: str, data: TaskData, runtime: Runtime,
                console: Console | None = None) -> Prepared:
        """Labels from train, the tagger, encoded windows and the dev/test/save steps.

        Raises:
            BertkitError: the training data has no entities.
        """
        train_s, dev_s, test_s = (data.splits[k] for k in ("train", "dev", "test"))
        full = data.label_examples  # never narrowed by --max-train-samples
        labels = iob2_label_set(sorted(entity_types(full)))
        if len(labels) < 2:
            raise BertkitError("the training data has no entities", file=data.sources["train"],
                               expected="B-/I- tags")
        for split, sents in (("dev", dev_s), ("test", test_s)):
            warn_unseen(unseen_labels(full, sents), split, "entity type", console)
        tokenizer = load_tokenizer(model_name)
        tagger = build_tagger(model_name, labels, cfg.crf, cfg.label_all_subwords)
        label2id = {lab: i for i, lab in enumerate(labels)}
        windows, report = encode(train_s, tokenizer, label2id, cfg.max_length,
                                 cfg.label_all_subwords)
        report.warn(train_s, console)
        packed = _set_packing(tagger, cfg, console)
        length_group = cfg.length_group or (1 if packed else 50)
        order = "random" if length_group == 1 else f"length-grouped ({length_group} together)"
        summary = (f"data: {len(train_s)}/{len(dev_s)}/{len(test_s)} sentences (train/dev/test), "
                   f"{describe_schemes(data.info.get('schemes') or {})}; labels {labels}; "
                   f"model {model_name}; "
                   f"device {runtime.device}, {runtime.precision}\n"
                   f"batches: {cfg.batch_size} sentences, {order}"
                   f"{f', packed into rows of >= {cfg.pack_length} tokens' if packed else ''}")
        gpu = runtime.device.type == "cuda"  # shape buckets matter on a GPU only
        rows = 8 if gpu else 1  # on a CPU: exactly the rows packing in the step made
        batches = WindowBatches(windows, cfg.batch_size, cfg.seed, tokenizer.pad_token_id,
                                sources=[f"{s.file}:{s.line}" for s in train_s],
                                length_group=length_group, multiple=32 if packed and gpu else 1,
                                pack=(cfg.pack_length, tagger.packer.start, rows)
                                if packed and world_size() == 1 else None)  # (*)
        # (*) a plan indexes the whole batch, which a multi-process run splits by rows: there
        # each rank's tagger packs its own rows in the step (Packer.logits)
        dev_windows, _ = encode(dev_s, tokenizer, label2id, cfg.max_length)

        def evaluate_dev(model: TokenTagger) -> dict:
            pred = tag_sentences(model, tokenizer, dev_s, runtime, cfg.max_length,
                                 cfg.eval_batch_size, windows=dev_windows)
            return entity_scores([s.tags for s in dev_s], pred)

        def test(model: TokenTagger, console: Console | None = None) -> ScoredSplit:
            test_windows, report = encode(test_s, tokenizer, label2id, cfg.max_length)
            report.warn(test_s, console)
            pred = tag_sentences(model, tokenizer, test_s, runtime, cfg.max_length,
                                 cfg.eval_batch_size, console, windows=test_windows)
            return ScoredSplit(entity_scores([s.tags for s in test_s], pred), lambda run_dir:
                               write_text(run_dir / "test_predictions.conll",
                                          format_conll(test_s, pred)))

        def save(model: TokenTagger, directory: Path) -> None:
            model.save(directory, tokenizer, {"max_length": cfg.max_length,
                                              "base_model": model_name, "data": cfg.data})

        return Prepared(tagger, batches, evaluate_dev, test, save, summary=summary, results={
            "metric": cfg.metric, "select_metric": METRICS[cfg.metric],
            "scoring": "seqeval: precision/recall/f1/macro_f1 strict IOB2 mode; conlleval_* "
                       "default mode; token_macro_f1: mean over types of token-level F1, "
                       "prefix dropped (scikit-learn)"}, select_metric=METRICS[cfg.metric])

    report = table_report(entity_table)
    evaluate, predict, stream = task_functions("ner")


TASK = NERTask()


def finetune_ner(cfg: NERConfig, console: Console | None = None) -> dict:
    """Fine-tune, keep the best dev epoch, score test, and write the run directory (through the
    shared driver, :func:`bertkit.tasks.driver.finetune`; ``cfg.seeds`` runs several seeds).

    Writes ``config.yaml``, ``metrics.jsonl``, ``results.json``, ``test_predictions.conll`` and
    ``model/`` (Hugging Face format + ``bertkit.json``) under ``cfg.output_dir``.

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad data, model, settings or output directory.
    """
    return finetune(TASK, cfg, console)


def evaluate_ner(model_dir: str, data: str, split: str = "test", device: str = "auto",
                 precision: str = "auto", batch_size: int = 32,
                 max_eval_samples: int | None = None,
                 console: Console | None = None) -> Evaluation:
    """Score a saved model on one split of ``data``.

    Returns:
        an :class:`~bertkit.tasks.base.Evaluation`: the metrics, the prediction file's text on
        demand, the examples and the predictions.

    Raises:
        BertkitError: no saved model there, bad data, or an unknown split.
    """
    split = parse_split(split)
    tagger, meta = load_tagger(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    runtime = make_runtime(device, precision, console)
    loaded = load_ner_data(data, (split,))
    warn_notes(loaded.notes, console)
    sents = loaded.splits[split][:max_eval_samples]
    known = {lab[2:] for lab in tagger.labels if lab != "O"}
    warn_unseen(unseen_labels(known, sents), split, "entity type", console, against="model")
    max_length = fit_length(meta.get("max_length", 512), position_limit(tagger.encoder.config),
                            console)
    pred = tag_sentences(tagger, tokenizer, sents, runtime, max_length,
                         batch_size, console)
    from bertkit.data.conll import format_conll

    return Evaluation(entity_scores([s.tags for s in sents], pred),
                      lambda: format_conll(sents, pred), sents, pred)


def predict_ner(model_dir: str, input_path: str, output: str | None = None, fmt: str = "conll",
                input_format: str = "auto", device: str = "auto", precision: str = "auto",
                batch_size: int = 32, console: Console | None = None,
                batch_tokens: int | None = None, pack: int = 0, backend: str = "torch") -> str:
    """Tag a CoNLL file (tokens in the first column) or plain text (one sentence a line), ``.gz``
    or not, through the streaming driver (:func:`bertkit.predict.stream_predict`, chunk by
    chunk; the command line adds resume, shards and bad-line skipping).

    A CoNLL input is either tokens only (one column on every line) or token ... gold tag with the
    same column count on every token line (:func:`~bertkit.data.conll.read_conll`); a one-column
    line in a tagged file is refused as ``finetune`` refuses it, rather than dropping the gold
    column of the whole output.

    Args:
        fmt: ``conll`` (token, [gold,] predicted) or ``jsonl`` (one object a sentence with its
            input ``line``, ``tokens``, ``tags`` and ``spans``: word offsets, end exclusive, type
            and text; from plain text, one object per input line, an empty one (nothing visible)
            with ``"empty": true`` and no tags, so that output line N is input line N).
        input_format: ``auto``, ``conll`` or ``text``.
        output: file to write atomically; None returns the text only.
        batch_tokens: batches of up to this many padded pieces instead of ``batch_size``
            windows (the same predictions).
        pack, backend: as :func:`tag_sentences`.

    Returns:
        the formatted predictions.

    Raises:
        BertkitError: bad input file, unknown format, or no saved model.
    """
    import io

    from bertkit.predict import stream_predict

    out = io.StringIO()
    stream_predict(stream_ner(model_dir, input_path, fmt, input_format, device, precision,
                              batch_size, console, batch_tokens, pack, backend), input_path, out,
                   console=console)
    text = out.getvalue()
    if output:
        write_text(output, text)
    return text


def stream_ner(model_dir: str, input_path: str, fmt: str = "conll", input_format: str = "auto",
               device: str = "auto", precision: str = "auto", batch_size: int = 32,
               console: Console | None = None, batch_tokens: int | None = None, pack: int = 0,
               backend: str = "torch"):
    """``predict ner``'s per-chunk predictor for the streaming driver
    (:func:`bertkit.tasks.ner.stream.ner_predictor`; arguments as :func:`predict_ner`'s).

    Raises:
        BertkitError: an unknown backend, or ``onnx`` without onnxruntime (before any input is
            read).
    """
    import functools

    from bertkit.tasks.ner.stream import ner_predictor

    if backend not in BACKENDS:
        raise BertkitError(f"unknown backend '{backend}'", expected=", ".join(BACKENDS))
    if backend != "torch":
        from bertkit.predict.onnx_backend import require_onnxruntime

        require_onnxruntime()
    return ner_predictor(model_dir, input_path, fmt, input_format, device, precision,
                         batch_size, console,
                         functools.partial(tag_sentences, max_tokens=batch_tokens, pack=pack,
                                           backend=backend))
