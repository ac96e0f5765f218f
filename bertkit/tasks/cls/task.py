"""``finetune cls``, ``evaluate cls`` and ``predict cls``: sentence (and sentence-pair)
classification as a :class:`~bertkit.tasks.base.Task`, run by the shared driver.

SciBERT's setup (Beltagy et al., 2019, §3.2): the final ``[CLS]`` vector (through BERT's pooler)
into a linear layer, cross-entropy, best epoch by dev macro-F1 (the metric it reports for
SciCite, ACL-ARC and Paper Field).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

import numpy as np
from rich.console import Console

from bertkit.inputs.batching import GroupedBatches
from bertkit.encoders import load_tokenizer
from bertkit.errors import BertkitError
from bertkit.io import write_text
from bertkit.metrics.collapse import warn_collapse
from bertkit.outputs.tables import label_scores_table
from bertkit.tasks.base import (TaskHeader, Evaluation, ScoredSplit, TaskData, TaskRun,
                                table_report, task_functions)
from bertkit.tasks.cls.card import CARD, HOC_SCORING, SCORING, card_example  # noqa: F401
from bertkit.tasks.cls.config import CLSConfig
from bertkit.tasks.cls.data import (EXTENSIONS, Columns, TextExample, check_known_labels,
                                    delimited_labels, label_set, labels_missing_from,
                                    load_cls_data, read_examples)
from bertkit.tasks.cls.delimiters import shared_delimiter
from bertkit.tasks.cls.pairs import check_pair_form
from bertkit.tasks.cls.encoding import collate, encode
from bertkit.tasks.cls.labels import checked_label_set
from bertkit.tasks.cls.model import (ClassifierLoss, build_classifier, load_classifier,
                                     save_classifier)
from bertkit.tasks.cls.scoring import (RunScorer, _sigmoid, _spread, classify,  # noqa: F401
                                       decide, example_ids, prediction_lines, score)
from bertkit.tasks.cls.suite import SUITE
from bertkit.tasks.common import (class_weights, parse_split, warn_bad_lines,
                                  warn_notes, write_test_outputs)
from bertkit.tasks.driver import finetune
from bertkit.training.devices import Runtime, make_runtime

def _columns(cfg: CLSConfig) -> Columns:
    return Columns(cfg.text_column, cfg.text_pair_column, cfg.label_column, cfg.multi_label,
                   cfg.label_sep, cfg.quoting)


def _split_note(sep: str, joined: list[str], examples: Sequence[TextExample]) -> str:
    """What ``--multi-label`` without ``--label-sep`` did with labels joined by ``sep``."""
    shown = ", ".join(repr(j) for j in joined[:3]) + (", ..." if len(joined) > 3 else "")
    return (f"--multi-label: {len(joined)} label(s) are {sep!r}-delimited lists ({shown}), so "
            f"every label is read split on {sep!r} (as --label-sep '{sep}'): "
            f"{len(label_set(list(examples)))} labels, not one class per combination")


class CLSTask(TaskHeader, name="cls", config_class=CLSConfig,
              extensions=EXTENSIONS, unit="texts", select_metric="macro_f1",
              card=CARD, suite=SUITE):
    """Sentence classification as a :class:`~bertkit.tasks.base.Task` (module docstring)."""

    def load(self, cfg: CLSConfig, splits: tuple[str, ...], console: Console | None = None
             ) -> TaskData:
        """Read ``splits`` of ``cfg.data`` (directory, registered name, or hub)."""
        notes: list[str] = []
        cols = _columns(cfg)
        out, sources, bad = load_cls_data(cfg.data, splits, cols, cfg.skip_bad_lines, notes)
        shared = shared_delimiter([x for v in out.values() for x in v], cols)
        if shared:  # --multi-label asked for, labels joined by one separator: split on it
            cfg.label_sep, notes = shared[0], []
            cols = _columns(cfg)
            out, sources, bad = load_cls_data(cfg.data, splits, cols, cfg.skip_bad_lines, notes)
            notes.append(_split_note(*shared, [x for v in out.values() for x in v]))
        warn_bad_lines([b for v in bad.values() for b in v], console)
        delimited = delimited_labels([x for v in out.values() for x in v], cols)
        warn_notes(notes + ([delimited] if delimited else []), console)
        return TaskData(out, sources, info={"skipped_bad_lines": {s: len(v)
                                                                  for s, v in bad.items()}})

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """The unlabelled text of the training split of ``data`` for TAPT
        (:mod:`bertkit.workflows.task_text`): each text (and the second text of a pair), of the first ``max_examples`` examples (all: None)."""
        train = load_cls_data(data, ("train",))[0]["train"][:max_examples]
        return [t for ex in train for t in (ex.text, ex.text_pair) if t]

    def prepare(self, cfg: CLSConfig, model_name: str, data: TaskData, runtime: Runtime,
                console: Console | None = None) -> TaskRun:
        """Labels from the whole training data (``data.full_train``: before
        ``--max-train-samples``, so a sample limit never changes the label set), the classifier,
        encoded inputs and the dev/test/save steps.

        Raises:
            BertkitError: fewer than two training labels (one, multi-label), or a dev/test
                label absent from the whole training data (file and line named).
        """
        train_x, dev_x, test_x = (data.splits[k] for k in ("train", "dev", "test"))
        labels = checked_label_set(data, cfg.multi_label)
        unseen = labels_missing_from(train_x, labels)
        tokenizer = load_tokenizer(model_name)
        token_types = "token_type_ids" in tokenizer.model_input_names
        label2id = {lab: i for i, lab in enumerate(labels)}
        weight = class_weights(cfg.class_weights, labels, train_x)
        model = ClassifierLoss(build_classifier(model_name, labels, cfg.multi_label), weight,
                               cfg.multi_label)
        enc = functools.partial(encode, tokenizer=tokenizer, label2id=label2id,
                                max_length=cfg.max_length, long_text=cfg.long_text,
                                multi_label=cfg.multi_label)
        items = {"train": enc(train_x), "dev": enc(dev_x)}
        shortened = {s: len({x.example for x in v if x.shortened}) for s, v in items.items()}
        col = functools.partial(collate, pad_id=tokenizer.pad_token_id, token_types=token_types)
        batches = GroupedBatches(items["train"], [len(x.input_ids) for x in items["train"]],
                                 cfg.batch_size, cfg.seed, col, group=cfg.length_group)
        how = ("kept head+tail" if cfg.long_text == "head-tail" else "windowed, logits averaged")
        summary = _summary(cfg, data, labels, unseen, shortened, how, model_name, runtime)
        scorer = RunScorer(cfg, items, labels, runtime, tokenizer.pad_token_id, token_types, dev_x)
        said: set = set()  # split notes printed once a run

        def evaluate_dev(m) -> dict:
            metrics = scorer.scored(m, "dev", dev_x)[0]
            warn_collapse(metrics, console, "dev", said)
            return metrics

        def test(m, console: Console | None = None) -> ScoredSplit:
            items["test"] = enc(test_x)
            shortened["test"] = len({x.example for x in items["test"] if x.shortened})
            if console is not None:  # the summary line counted train and dev
                console.print(f"test: {shortened['test']} of {len(test_x)} texts over "
                              f"{cfg.max_length} pieces, {how}", highlight=False)
            t = scorer.thresholds_of(m)
            metrics, pred, probs = scorer.scored(m, "test", test_x,
                                          np.asarray(t) if t is not None else None)
            metrics["thresholds"] = t
            warn_collapse(metrics, console, "test")

            def write(run_dir: Path) -> None:
                write_test_outputs(run_dir, prediction_lines(test_x, labels, pred, probs,
                                                             cfg.multi_label),
                                   metrics, f"test: {cfg.data}")

            return ScoredSplit(metrics, write)

        def save(m, directory: Path) -> None:
            save_classifier(m, tokenizer, directory, {
                "labels": labels, "multi_label": cfg.multi_label, "thresholds": scorer.thresholds_of(m),
                "max_length": cfg.max_length, "long_text": cfg.long_text,
                "text_column": cfg.text_column, "text_pair_column": cfg.text_pair_column,
                "label_column": cfg.label_column, "label_sep": cfg.label_sep,
                "quoting": cfg.quoting, "base_model": model_name, "data": cfg.data,
                "pairs": any(x.text_pair for x in data.full_train)})

        return TaskRun(model, batches, evaluate_dev, test, save, summary=summary,
                       choose_on_dev=scorer.choose_thresholds, select_metric=cfg.select_metric(),
                       results={
            "labels": labels, "multi_label": cfg.multi_label, "long_text": cfg.long_text,
            "class_weights": cfg.class_weights, "shortened_texts": shortened,
            "metric": cfg.metric, "scoring": SCORING + (HOC_SCORING if cfg.multi_label else ""),
            "example": card_example(data.full_train)})

    report = table_report(label_scores_table)
    evaluate, predict, stream = task_functions("cls")


def stream_cls(model_dir: str, input_path: str, input_format: str = "auto", device: str = "auto",
               precision: str = "auto", batch_size: int = 64, text_column: str | None = None,
               quoting: str | None = None, console: Console | None = None):
    """``predict cls`` for :mod:`bertkit.predict` (:mod:`bertkit.tasks.cls.stream`); None
    for CSV/TSV input, which :func:`predict_cls` reads whole."""
    from bertkit.tasks.cls.stream import cls_predictor, stream_format

    fmt = stream_format(input_path, input_format)
    return None if fmt is None else cls_predictor(
        model_dir, input_path, fmt, device, precision, batch_size, text_column, quoting,
        console, _run_saved, prediction_lines, _saved_columns)


def _summary(cfg: CLSConfig, data: TaskData, labels: list[str], unseen: list[str],
             shortened: dict, how: str, model_name: str, runtime: Runtime) -> str:
    """The line printed before training: sizes, labels, long texts, weights, model, device."""
    train_x, dev_x, test_x = (data.splits[k] for k in ("train", "dev", "test"))
    summary = (f"data: {len(train_x)}/{len(dev_x)}/{len(test_x)} texts (train/dev/test); "
               f"{len(labels)} labels{' (multi-label)' if cfg.multi_label else ''}; "
               f"over {cfg.max_length} pieces, {how}: {shortened['train']} train, "
               f"{shortened['dev']} dev; class weights {cfg.class_weights}; model "
               f"{model_name}; device {runtime.device}, {runtime.precision}")
    if unseen:  # labels beyond --max-train-samples: kept, but never trained on
        summary += (f"\nnote: {len(unseen)} of the {len(labels)} label(s) (from all "
                    f"{len(data.label_examples)} training texts) not among the {len(train_x)} "
                    f"trained on: predicted from untrained weights only: {', '.join(unseen)}")
    return summary


TASK = CLSTask()


def finetune_cls(cfg: CLSConfig, console: Console | None = None) -> dict:
    """Fine-tune, keep the best dev epoch (macro-F1), score test, and write the run directory
    (through the shared driver, :func:`bertkit.tasks.driver.finetune`).

    Writes ``config.yaml``, ``metrics.jsonl``, ``results.json``, ``test_predictions.jsonl``,
    ``test_confusion.{csv,png}`` (single-label) and ``model/`` (a plain
    ``AutoModelForSequenceClassification`` + tokenizer + ``bertkit.json``).

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad data (before any training), model, settings or output directory.
    """
    return finetune(TASK, cfg, console)


def _saved_columns(meta: dict, text_column: str | None, label_column: str | None,
                   quoting: str | None = None) -> Columns:
    return Columns(text_column or meta.get("text_column", "text"),
                   meta.get("text_pair_column", "text_pair"),
                   label_column or meta.get("label_column", "label"),
                   bool(meta.get("multi_label", False)), meta.get("label_sep"),
                   quoting or meta.get("quoting", "csv"))


def _run_saved(model, tokenizer, labels, meta, xs, runtime, batch_size):
    from bertkit.inputs.lengths import fit_length, position_limit

    max_length = fit_length(int(meta.get("max_length", 512)), position_limit(model.config))
    label2id = {lab: i for i, lab in enumerate(labels)}
    multi = bool(meta.get("multi_label", False))
    items = encode(xs, tokenizer, label2id, max_length, meta.get("long_text", "head-tail"), multi)
    logits = classify(model, items, len(xs), runtime, tokenizer.pad_token_id, batch_size,
                      "token_type_ids" in tokenizer.model_input_names)
    thresholds = np.asarray(meta["thresholds"]) if multi and meta.get("thresholds") else \
        (np.full(len(labels), 0.5) if multi else None)
    pred, probs = decide(logits, labels, thresholds)
    return pred, probs, len({x.example for x in items if x.shortened})


def evaluate_cls(model_dir: str, data: str, split: str = "test", device: str = "auto",
                 precision: str = "auto", batch_size: int = 64, skip_bad_lines: bool = False,
                 text_column: str | None = None, label_column: str | None = None,
                 quoting: str | None = None, max_eval_samples: int | None = None,
                 console: Console | None = None) -> Evaluation:
    """Score a saved classifier on one split of ``data``.

    Args:
        text_column / label_column: field names (None: those saved with the model).
        quoting: CSV/TSV quotes, ``csv`` or ``none`` (None: as saved with the model).

    Returns:
        an :class:`~bertkit.tasks.base.Evaluation`: the metrics, the prediction file's text on
        demand, the examples and the predictions.

    Raises:
        BertkitError: no saved model there, bad data, a label the model does not know, or an
            unknown split.
    """
    split = parse_split(split)
    model, tokenizer, labels, meta = load_classifier(model_dir)
    runtime = make_runtime(device, precision, console)
    cols = _saved_columns(meta, text_column, label_column, quoting)
    notes: list[str] = []
    out, _, bad = load_cls_data(data, (split,), cols, skip_bad_lines, notes)
    warn_bad_lines(bad[split], console)
    warn_notes(notes, console)
    xs = out[split][:max_eval_samples]
    check_pair_form(xs, meta.get("pairs"), cols, "records of the form the model was trained on")
    check_known_labels(xs, labels, split, f"the model's labels ({model_dir})")
    pred, probs, shortened = _run_saved(model, tokenizer, labels, meta, xs, runtime, batch_size)
    metrics = score([x.label for x in xs], pred, labels, cols.multi_label, example_ids(xs))
    metrics["shortened_texts"] = shortened
    warn_collapse(metrics, console, split)
    return Evaluation(metrics, lambda: prediction_lines(
        xs, labels, pred, probs, any(isinstance(p, list) for p in pred)), xs, pred)


def _read_input(path: str, input_format: str, cols: Columns, skip_bad_lines: bool):
    """Examples of a prediction input: JSON lines, CSV/TSV (header row) or plain text lines.

    Plain text: one example per line, lines ending only at LF or CRLF (a lone CR is text), blank
    lines included; a line empty once control and zero-width characters are removed is an
    example flagged ``empty``."""
    if input_format not in ("auto", "jsonl", "csv", "tsv", "text"):
        raise BertkitError(f"unknown input format '{input_format}'",
                           expected="auto, jsonl, csv, tsv or text")
    p = Path(path)
    if input_format == "auto":
        suffix = p.suffix.lower()
        if suffix in (".csv", ".tsv"):
            input_format = suffix[1:]
        elif suffix in (".jsonl", ".json"):
            input_format = "jsonl"
        else:
            try:
                head = p.read_bytes()[:4096].removeprefix(b"\xef\xbb\xbf").lstrip()
            except OSError as exc:
                raise BertkitError(f"cannot read the file: {exc.strerror}", file=path) from None
            input_format = "jsonl" if head.startswith(b"{") else "text"
    if input_format == "text":
        from bertkit.data.conll import read_lines

        from bertkit.data.text import visible

        xs = [TextExample(t, None, None, str(p), n, {"text": t}, empty=not visible(t))
              for n, t in read_lines(p, old_mac=False)]
        if all(x.empty for x in xs):
            raise BertkitError("no text found", file=path, expected="one text a line")
        return xs, []
    if input_format in ("csv", "tsv") and p.suffix.lower() != f".{input_format}":
        raise BertkitError(f"--input-format {input_format} needs a .{input_format} file",
                           file=path)
    read = read_examples(p, cols, labelled=False, skip_bad_lines=skip_bad_lines)
    return read.examples, read.bad_lines


def predict_cls(model_dir: str, input_path: str, output: str | None = None,
                input_format: str = "auto", device: str = "auto", precision: str = "auto",
                batch_size: int = 64, skip_bad_lines: bool = False,
                text_column: str | None = None, quoting: str | None = None,
                console: Console | None = None) -> str:
    """Classify the texts of a file: JSON lines or CSV/TSV (the text field as saved with the
    model, or ``text_column``; a pair field is used when present) or plain text, one a line.

    Args:
        input_format: ``auto`` (by extension, else JSON lines when the first character is
            ``{``, else text), ``jsonl``, ``csv``, ``tsv`` or ``text``.
        output: file to write atomically; None returns the text only.
        quoting: CSV/TSV quotes, ``csv`` or ``none`` (None: as saved with the model).

    Returns:
        JSON lines: each input object with ``line``, ``predicted`` and ``probability`` (or
        ``probabilities`` per label for a multi-label model); one line per input record (per
        input line for plain text). A text that is empty once control and zero-width characters
        are removed is not labelled: ``"predicted": null, "empty": true`` (and a warning with
        the count).

    Raises:
        BertkitError: unknown format, bad input line (without ``skip_bad_lines``), no saved model.
    """
    model, tokenizer, labels, meta = load_classifier(model_dir)
    runtime = make_runtime(device, precision, console)
    cols = _saved_columns(meta, text_column, None, quoting)
    xs, bad = _read_input(input_path, input_format, cols, skip_bad_lines)
    warn_bad_lines(bad, console)
    check_pair_form(xs, meta.get("pairs"), cols, "records of the form the model was trained on")
    kept = [x for x in xs if not x.empty]
    empty = [x.line for x in xs if x.empty]
    if console and empty:
        shown = ", ".join(map(str, empty[:10])) + (", ..." if len(empty) > 10 else "")
        console.print(f"[yellow]warning:[/] {len(empty)} input line(s) empty once control and "
                      f"zero-width characters are removed (line {shown}): flagged "
                      f'"empty": true, not labelled', highlight=False)
    pred, probs, shortened = _run_saved(model, tokenizer, labels, meta, kept, runtime,
                                        batch_size)
    if console and shortened:
        console.print(f"note: {shortened} text(s) over the model's {meta.get('max_length')} "
                      f"pieces ({meta.get('long_text', 'head-tail')})", highlight=False)
    text = prediction_lines(xs, labels, _spread(xs, pred, None), _spread(xs, probs, None),
                            cols.multi_label)
    if output:
        write_text(output, text)
    return text
