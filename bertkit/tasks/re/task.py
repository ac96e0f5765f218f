"""``finetune re``, ``evaluate re`` and ``predict re`` as importable functions.

The CLI in ``bertkit/cli`` is a thin wrapper over :func:`finetune_re`, :func:`evaluate_re` and
:func:`predict_re`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from rich.console import Console
from rich.markup import escape

from bertkit.data.relations import BadLine, RelationExample, read_relations
from bertkit.errors import BertkitError
from bertkit.predict.inference import run_batches, sorted_batches
from bertkit.io import write_text
from bertkit.inputs.lengths import fit_length, position_limit
from bertkit.metrics.collapse import warn_collapse
from bertkit.metrics.re import detect_negative, relation_scores
from bertkit.outputs.modelcard import CardSpec, Metric, pipeline_usage
from bertkit.outputs.tables import label_scores_table
from bertkit.tasks.base import (TaskHeader, Evaluation, Prepared, ScoredSplit, TaskData,
                                table_report, task_functions)
from bertkit.tasks.common import (class_weights, parse_split, prediction_line, warn_bad_lines,
                                  warn_unseen, write_test_outputs)
from bertkit.tasks.driver import finetune
from bertkit.tasks.re.config import REConfig
from bertkit.tasks.re.data import EXTENSIONS, entity_types, load_re_data, unseen_labels
from bertkit.tasks.re.encoding import Encoded, MarkerSet, PairBatches, collate, encode
from bertkit.tasks.re.model import (WeightedRelationLoss, build_relation_model,
                                     load_relation_model, portability_note, save_relation_model,
                                     unwrap)
from bertkit.tasks.re.suite import SUITE
from bertkit.training.devices import Runtime, is_main_process, make_runtime

SCORING = ("scikit-learn: micro_* over relation labels excluding negative_label; macro_f1 = "
           "unweighted mean F1 over positive labels present in gold or predictions; accuracy "
           "over all pairs")


def classify(model, items: Sequence[Encoded], runtime: Runtime, pad_id: int,
             batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Predicted label ids ``[N]`` and their softmax probabilities ``[N]`` for encoded pairs.

    Inputs are sorted by length so each batch is padded only to its own longest; on a
    multi-core CPU two batches run at once (:func:`bertkit.predict.inference.run_batches`).
    """
    n = len(items)
    pred, prob = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.float32)
    if not n:
        return pred, prob
    lengths = np.asarray([len(x.input_ids) for x in items])
    model = unwrap(model)
    model.eval()
    model.to(runtime.device)

    def predict(idx: np.ndarray) -> None:
        batch = collate([items[i] for i in idx], pad_id)
        batch.pop("labels")
        batch = runtime.to_device(batch)
        with runtime.autocast():
            logits = model(**batch).logits
        p, k = logits.float().softmax(-1).max(-1)
        pred[idx], prob[idx] = k.cpu().numpy(), p.cpu().numpy()

    run_batches(predict, sorted_batches(lengths, batch_size), runtime.device)
    return pred, prob


def _warn_bad(bad: dict[str, list[BadLine]] | list[BadLine], console: Console | None) -> int:
    """:func:`bertkit.tasks.common.warn_bad_lines` over every split's bad lines."""
    return warn_bad_lines([b for v in bad.values() for b in v] if isinstance(bad, dict) else bad,
                          console)


def _negative(setting: str, labels: Sequence[str], console: Console | None) -> str | None:
    if setting == "-":
        return None
    if setting == "auto":
        return detect_negative(labels)
    if setting not in labels and console:
        console.print(f"[yellow]warning:[/] negative label '{escape(setting)}' is not among the "
                      f"training labels", highlight=False)
    return setting


def prediction_lines(examples: Sequence[RelationExample], labels: Sequence[str],
                     pred: np.ndarray, prob: np.ndarray) -> str:
    """JSON lines: each input object with ``predicted`` (label) and ``probability`` added."""
    return "".join(prediction_line(ex.raw, ex.line, labels[int(k)],
                                   {"probability": round(float(p), 6)})
                   for ex, k, p in zip(examples, pred, prob))


CARD = CardSpec(
    "finetune re", "text-classification", "Relation extraction", "AutoModelForSequenceClassification",
    (Metric("micro_f1", "f1", "micro-F1 (relation labels, negative label excluded)", "micro-F1"),
     Metric("macro_f1", "f1", "macro-F1 (relation labels)", "macro-F1"),
     Metric("accuracy", "accuracy", "accuracy (all pairs)", "accuracy")),
    pipeline_usage("clf", "text-classification",
                   "[E1] aspirin [/E1] inhibits [E2] cox-1 [/E2] in platelets ."),
    remote_code_file="relation.py")
"""The model card (:mod:`bertkit.outputs.modelcard`); its metrics are the task's headline metrics."""


class RETask(TaskHeader, name="re", config_class=REConfig,
             extensions=EXTENSIONS, unit="pairs", select_metric="micro_f1",
             card=CARD, suite=SUITE):
    """Relation classification between two marked entities as a
    :class:`~bertkit.tasks.base.Task` (entity markers, Baldini Soares et al. 2019 §3; SciBERT's
    ``[CLS]`` pooling, Beltagy et al. 2019 §3.2); best epoch by dev micro-F1 over the positive
    labels."""

    def load(self, cfg: REConfig, splits: tuple[str, ...], console: Console | None = None
             ) -> TaskData:
        """Read ``splits`` (every one before training, so a bad line stops the run early)."""
        data = load_re_data(cfg.data, splits, skip_bad_lines=cfg.skip_bad_lines)
        _warn_bad(data.bad_lines, console)
        return TaskData(data.splits, data.sources, info={
            "skipped_bad_lines": {s: len(v) for s, v in data.bad_lines.items()}})

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """The unlabelled text of the training split of ``data`` for TAPT
        (:mod:`bertkit.workflows.task_text`): each pair's sentence, entity markers stripped, of the first ``max_examples`` pairs (all: None)."""
        return [ex.text for ex in load_re_data(data, ("train",)).splits["train"][:max_examples]]

    def prepare(self, cfg: REConfig, model_name: str, data: TaskData, runtime: Runtime,
                console: Console | None = None) -> Prepared:
        """Labels from train, the marker set, the model, encoded pairs and dev/test/save.

        Raises:
            BertkitError: fewer than two relation labels in the training data.
        """
        train_x, dev_x, test_x = (data.splits[k] for k in ("train", "dev", "test"))
        full = data.label_examples  # never narrowed by --max-train-samples
        labels = sorted({ex.label for ex in full})
        if len(labels) < 2:
            raise BertkitError(f"the training data has {len(labels)} relation label(s)",
                               file=data.sources["train"], expected="at least two labels")
        negative = _negative(cfg.negative_label, labels, console)
        for split, xs in (("dev", dev_x), ("test", test_x)):
            warn_unseen(unseen_labels(full, xs), split, "label", console)
        types = tuple(entity_types(full)) if cfg.typed_markers else ()  # as the labels
        if cfg.typed_markers and not types and console:
            console.print("[yellow]warning:[/] --typed-markers: the data gives no entity types; "
                          "untyped markers used", highlight=False)
        markers = MarkerSet(types)
        model, tokenizer, marker_ids = build_relation_model(model_name, labels, cfg.pooling,
                                                            markers)
        weight = class_weights(cfg.class_weights, labels, train_x)
        if weight is not None:
            model = WeightedRelationLoss(model, weight)
        label2id = {lab: i for i, lab in enumerate(labels)}
        enc = {s: encode(xs, tokenizer, marker_ids, markers, label2id, cfg.max_length)
               for s, xs in (("train", train_x), ("dev", dev_x), ("test", test_x))}
        truncated = {s: int(sum(x.truncated for x in v)) for s, v in enc.items()}
        summary = (f"data: {len(train_x)}/{len(dev_x)}/{len(test_x)} pairs (train/dev/test); "
                   f"{len(labels)} labels, negative label {negative!r}; pooling {cfg.pooling}; "
                   f"class weights {cfg.class_weights}; "
                   f"{len(markers.tokens())} markers; over {cfg.max_length} pieces, cut around the "
                   f"entities: {truncated['train']} train, {truncated['dev']} dev, "
                   f"{truncated['test']} test; "
                   f"model {model_name}; device {runtime.device}, {runtime.precision}")
        batches = PairBatches(enc["train"], cfg.batch_size, cfg.seed, tokenizer.pad_token_id)
        dev_gold = [ex.label for ex in dev_x]
        said: set = set()  # split notes printed once a run

        def evaluate_dev(m) -> dict:
            pred, _ = classify(m, enc["dev"], runtime, tokenizer.pad_token_id,
                               cfg.eval_batch_size)
            scores = relation_scores(dev_gold, [labels[k] for k in pred], negative, labels)
            warn_collapse(scores, console if is_main_process() else None, "dev", said)
            return scores

        def test(m, console: Console | None = None) -> ScoredSplit:
            pred, prob = classify(m, enc["test"], runtime, tokenizer.pad_token_id,
                                  cfg.eval_batch_size)
            metrics = relation_scores([ex.label for ex in test_x], [labels[k] for k in pred],
                                      negative, labels)
            warn_collapse(metrics, console, "test")

            def write(run_dir: Path) -> None:
                write_test_outputs(run_dir, prediction_lines(test_x, labels, pred, prob), metrics,
                                   f"test: {cfg.data}")

            return ScoredSplit(metrics, write)

        def save(m, directory: Path) -> None:
            save_relation_model(m, tokenizer, directory, {
                "max_length": cfg.max_length, "base_model": model_name, "data": cfg.data,
                "negative_label": negative, "entity_types": list(types)})
            if console:
                console.print(escape(portability_note(cfg.pooling)), highlight=False)

        return Prepared(model, batches, evaluate_dev, test, save, summary=summary, results={
            "pooling": cfg.pooling, "negative_label": negative, "truncated_pairs": truncated,
            "class_weights": cfg.class_weights, "scoring": SCORING})

    report = table_report(label_scores_table)
    evaluate, predict, stream = task_functions("re")


def stream_re(model_dir: str, input_path: str, input_format: str = "auto", device: str = "auto",
              precision: str = "auto", batch_size: int = 64, console: Console | None = None):
    """``predict re`` for :mod:`bertkit.predict` (:mod:`bertkit.tasks.re.stream`)."""
    from bertkit.tasks.re.stream import re_predictor

    return re_predictor(model_dir, input_path, input_format, device, precision, batch_size,
                        console, classify, prediction_lines)


TASK = RETask()


def finetune_re(cfg: REConfig, console: Console | None = None) -> dict:
    """Fine-tune, keep the best dev epoch (micro-F1), score test, and write the run directory
    (through the shared driver, :func:`bertkit.tasks.driver.finetune`).

    Writes ``config.yaml``, ``metrics.jsonl``, ``results.json``, ``test_predictions.jsonl``,
    ``test_confusion.{csv,png}`` and ``model/`` (Hugging Face format + ``bertkit.json``).

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad data (before any training), model, settings or output directory.
    """
    return finetune(TASK, cfg, console)


def evaluate_re(model_dir: str, data: str, split: str = "test", device: str = "auto",
                precision: str = "auto", batch_size: int = 64, skip_bad_lines: bool = False,
                negative_label: str | None = None, max_eval_samples: int | None = None,
                console: Console | None = None
                ) -> Evaluation:
    """Score a saved model on one split of ``data``.

    Args:
        negative_label: None: the one saved with the model; else as ``REConfig.negative_label``.

    Returns:
        an :class:`~bertkit.tasks.base.Evaluation`: the metrics, the prediction file's text on
        demand, the examples and the predictions.

    Raises:
        BertkitError: no saved model there, bad data, or an unknown split.
    """
    split = parse_split(split)
    model, tokenizer, labels, markers, marker_ids, meta = load_relation_model(model_dir)
    runtime = make_runtime(device, precision, console)
    read = load_re_data(data, (split,), skip_bad_lines)
    _warn_bad(read.bad_lines, console)
    xs = read.splits[split][:max_eval_samples]
    negative = meta.get("negative_label") if negative_label is None else \
        _negative(negative_label, labels, console)
    warn_unseen(unseen_labels(set(labels), xs), split, "label", console, against="model")
    max_length = fit_length(meta.get("max_length", 512), position_limit(model.config),
                            console)
    items = encode(xs, tokenizer, marker_ids, markers, {}, max_length)
    pred, prob = classify(model, items, runtime, tokenizer.pad_token_id, batch_size)
    metrics = relation_scores([ex.label for ex in xs], [labels[k] for k in pred], negative, labels)
    warn_collapse(metrics, console, split)
    return Evaluation(metrics, lambda: prediction_lines(xs, labels, pred, prob), xs,
                      [labels[k] for k in pred])


def predict_re(model_dir: str, input_path: str, output: str | None = None,
               input_format: str = "auto", device: str = "auto", precision: str = "auto",
               batch_size: int = 64, skip_bad_lines: bool = False,
               console: Console | None = None) -> str:
    """Classify the entity pairs of a file: JSON lines (any form, label optional) or plain text
    with one ``<< >>``/``[[ ]]``-marked sentence a line.

    Args:
        input_format: ``auto`` (JSON lines when the first non-blank character is ``{``), ``jsonl``
            or ``text``.
        output: file to write atomically; None returns the text only.

    Returns:
        JSON lines: each input object (``{"text": …}`` for text input) with ``line``,
        ``predicted`` and ``probability`` added.

    Raises:
        BertkitError: unknown format, bad input line (without ``skip_bad_lines``), no saved model.
    """
    if input_format not in ("auto", "jsonl", "text"):
        raise BertkitError(f"unknown input format '{input_format}'", expected="auto, jsonl or text")
    model, tokenizer, labels, markers, marker_ids, meta = load_relation_model(model_dir)
    runtime = make_runtime(device, precision, console)
    if input_format == "auto":
        try:
            head = Path(input_path).read_bytes()[:4096].lstrip()
        except OSError as exc:
            raise BertkitError(f"cannot read the file: {exc.strerror}", file=input_path) from None
        input_format = "jsonl" if head.startswith(b"{") else "text"
    read = read_relations(input_path, labelled=False, skip_bad_lines=skip_bad_lines,
                          text_lines=input_format == "text")
    _warn_bad(read.bad_lines, console)
    max_length = fit_length(meta.get("max_length", 512), position_limit(model.config),
                            console)
    items = encode(read.examples, tokenizer, marker_ids, markers, {}, max_length)
    pred, prob = classify(model, items, runtime, tokenizer.pad_token_id, batch_size)
    text = prediction_lines(read.examples, labels, pred, prob)
    if output:
        write_text(output, text)
    return text
