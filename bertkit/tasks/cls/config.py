"""``finetune cls`` settings (:class:`CLSConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.settings.options import (CONFUSION, DEVICE, MAX_EVAL_SAMPLES, METRICS_OUTPUT, PRECISION,
                             PREDICT_OUTPUT, SAVED_MODEL, SKIP_BAD_LINES, SPLIT, STREAM_OPTIONS,
                             Commands, Option, batch_size, option)
from bertkit.tasks.common import CLASS_WEIGHTS
from bertkit.tasks.finetune_config import (FinetuneConfig, data_option, eval_batch_option,
                                           evaluate_data_option, input_option, max_eval_option,
                                           max_train_option, model_option, predictions_option,
                                           skip_bad_lines_option)

LONG_TEXT = ("head-tail", "windows")
QUOTING = ("csv", "none")  # CSV/TSV quotes: csv rules (quoted fields), or plain characters
SELECT = ("macro_f1", "micro_f1", "accuracy", "hoc_f1")  # dev metrics that can pick the best epoch

_TEXT_COLUMN = Option("Field or column holding the text. \\[default: as trained]", ("--text-column",),
                      name="text_column", type=str)
_QUOTING = Option("CSV/TSV quotes: csv or none (a \" is a plain character). \\[default: as trained]",
                  ("--quoting",), name="quoting", type=str, choices=QUOTING)
COMMANDS = Commands(
    finetune="""Fine-tune an encoder for sentence (or sentence-pair) classification, keep the best dev
    epoch (macro-F1), score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.jsonl,
    test_confusion.{csv,png} and model/ (a plain AutoModelForSequenceClassification; works with
    pipeline("text-classification")). The packaged MiniLM on scicite, acl-arc or paper-field
    trains with that set's recipe settings (scicite-cls-minilm, ...) unless a flag or --recipe
    says otherwise; the first line printed says where each setting came from.
    """,
    evaluate="""Score a saved text classifier on a labelled split: macro-F1, micro-F1, accuracy, per label,
    beside the majority-class baseline.""",
    predict="""Classify texts with a saved text classifier: JSON lines with predicted and probability,
    one per input record (per line for plain text); a text empty once control and zero-width
    characters are removed is flagged "empty": true, not labelled.""",
    evaluate_options=(
        SAVED_MODEL,
        evaluate_data_option("Registered set ({sets}; under $BERTKIT_DATA/cls/) or a directory "
                             "with split .jsonl/.csv/.tsv files."),
        SPLIT, MAX_EVAL_SAMPLES, METRICS_OUTPUT,
        predictions_option("Also write each text with its predicted label as JSON lines here."),
        Option(CONFUSION.help[:-1] + " (single-label models).", CONFUSION.flags, name="confusion",
               type=Path),
        _TEXT_COLUMN,
        Option("Field or column holding the label. \\[default: as trained]", ("--label-column",),
               name="label_column", type=str),
        SKIP_BAD_LINES, _QUOTING, DEVICE, PRECISION, batch_size("Texts", 64)),
    predict_options=(
        SAVED_MODEL,
        input_option("JSON lines or CSV/TSV (header row; the text field as trained, or "
                     "--text-column; label optional) or plain text, one text a line."),
        PREDICT_OUTPUT,
        Option("auto (by extension, else jsonl when the file starts with {, else text), jsonl, "
               "csv, tsv or text.", ("--input-format",), name="input_format", type=str,
               choices=("auto", "jsonl", "csv", "tsv", "text"), default="auto"),
        _TEXT_COLUMN, SKIP_BAD_LINES, _QUOTING, DEVICE, PRECISION, batch_size("Texts", 64),
        *STREAM_OPTIONS),
)


@dataclass
class CLSConfig(FinetuneConfig):
    """``finetune cls`` settings: the training-loop fields plus these.

    Attributes:
        model: encoder directory or hub id (None: the packaged MiniLM encoder).
        data: registered set (``scicite``, ``acl-arc``, ``paper-field``) or a directory with
            train/dev/test ``.jsonl``/``.json`` (JSON lines), ``.csv`` or ``.tsv`` (header row).
        text_column / text_pair_column / label_column: field names; the pair field is optional
            (sentence pairs when present), ``label`` may be a list with ``multi_label``.
        multi_label: each example has a list of labels: sigmoid outputs, binary cross-entropy,
            and one decision threshold per label chosen on dev (saved with the model).
        label_sep: with ``multi_label``, a string label is a list joined by this separator
            (``"a;b"`` with ``;``); None: a string label is one label (labels that look
            delimited are warned about).
        quoting: CSV/TSV quote handling: ``csv`` (quoted fields may hold delimiters and line
            breaks) or ``none`` (a ``"`` is a plain character: unquoted TSV exports whose
            texts hold quotes).
        long_text: an input over ``max_length`` pieces is never cut silently: ``head-tail`` keeps
            its first quarter and last three quarters of the budget (Sun et al., 2019, "How to
            fine-tune BERT for text classification?", §5.3: head+tail beat head-only and
            tail-only) and the run reports how many were shortened; ``windows`` splits it into
            windows overlapping by half a window and averages their logits.
        class_weights: ``balanced`` weighs each label's loss by ``N / (C * count)`` (scikit-learn's
            ``balanced``), for imbalanced sets such as ACL-ARC; ``none``: plain cross-entropy.
        max_length: pieces per input, ``[CLS]``/``[SEP]`` included.
        length_group: training batches sorted by length together (Hugging Face's
            ``group_by_length`` mega-batches, :func:`bertkit.inputs.batching.length_grouped_batches`);
            1 gives random batches padded to their own longest text.
        skip_bad_lines: skip (and count) unreadable lines instead of stopping before training.
        eval_batch_size: inputs per forward pass when evaluating and predicting.
        max_train_samples / max_eval_samples: use only the first N examples (quick runs).
    """

    data: str = data_option("scicite", "Registered set ({sets}; under $BERTKIT_DATA/cls/) or a "
                            "directory with train/dev/test .jsonl (text, label), .csv or .tsv "
                            "(header row).")
    model: str | None = model_option()
    text_column: str = option("text", help="Field (JSON) or column (CSV/TSV) holding the text.")
    text_pair_column: str = option("text_pair", help="Field of the second text of a sentence pair, "
                                   "used when present.")
    label_column: str = option("label", help="Field or column holding the label (a list with "
                               "--multi-label).")
    multi_label: bool = option(False, flags=("--multi-label/--single-label",), help="Labels are "
                               "lists: sigmoid outputs, one threshold per label chosen on dev.",
                               shown="single-label")
    label_sep: str | None = option(None, help="With --multi-label: a string label is a list joined "
                                   "by this separator (e.g. ';' for \"a;b\").",
                                   shown="none; labels that look delimited are warned about")
    quoting: str = option("csv", choices=QUOTING, help="CSV/TSV quotes: csv (quoted fields may hold "
                          "delimiters and line breaks) or none (a \" is a plain character, for "
                          "unquoted TSV exports).")
    long_text: str = option("head-tail", choices=LONG_TEXT, help="Texts over --max-length: "
                            "head-tail (keep the first quarter and last three quarters of the "
                            "budget; counted and reported) or windows (overlapping windows, logits "
                            "averaged).")
    class_weights: str = option("none", choices=CLASS_WEIGHTS, help="none, or balanced (loss "
                                "weight N/(C*count) per label, for imbalanced sets such as "
                                "ACL-ARC).")
    skip_bad_lines: bool = skip_bad_lines_option()
    max_length: int = option(512, min=8, help="Pieces per input incl. [CLS]/[SEP]; longer texts "
                             "follow --long-text, never cut silently.")
    eval_batch_size: int = eval_batch_option(64, "Texts")
    length_group: int = option(50, min=1, help="Training batches sorted by length together (1: "
                               "random batches).")
    metric: str = option("auto", choices=("auto", *SELECT), help="Dev metric that picks the best epoch: "
                         "macro_f1 (SciBERT's), micro_f1, accuracy (BLURB's PubMedQA), hoc_f1 "
                         "(BLURB's HoC, multi-label) or auto (the registered set's, else "
                         "macro_f1).")
    max_train_samples: int | None = max_train_option("texts")
    max_eval_samples: int | None = max_eval_option("texts")

    commands = COMMANDS

    def resolve_registered(self) -> None:
        """``--metric auto`` made concrete from ``data`` as typed (the driver calls this before
        ``data`` becomes an absolute path, as ``__post_init__`` reads ``multi_label`` from the
        name): the run's ``config.yaml`` then records the metric it selected by."""
        self.metric = self.select_metric()

    def select_metric(self) -> str:
        """The dev metric that picks the best epoch: ``metric``, or for ``auto`` the registered
        set's (:attr:`bertkit.data.sets.DatasetEntry.metric`: ``hoc_f1`` for HoC, ``accuracy``
        for PubMedQA) where it is one of :data:`SELECT`, else ``macro_f1``."""
        if self.metric != "auto":
            return self.metric
        from bertkit.data.sets import entry

        reg = entry("cls", self.data)
        return reg.metric if reg is not None and reg.metric in SELECT else "macro_f1"

    def __post_init__(self) -> None:
        # a registered multi-label set (HoC) is read as one, whatever the flag: its labels are
        # lists, which single-label reading would refuse line by line
        from bertkit.data.sets import MULTI_LABEL_SETS

        if self.data in MULTI_LABEL_SETS:
            self.multi_label = True

    def task_checks(self) -> tuple:
        return (("length_group", self.length_group >= 1, "an integer >= 1 (1: random batches)"),
                ("text_column", bool(self.text_column.strip()), "a field name"),
                ("label_column", bool(self.label_column.strip()), "a field name"),
                ("label_sep", self.label_sep is None or (bool(self.label_sep) and self.multi_label),
                 "a non-empty separator, with --multi-label (labels are lists)"),
                ("metric", self.metric != "hoc_f1" or self.multi_label,
                 "macro_f1, micro_f1 or accuracy for single-label data; hoc_f1 needs "
                 "--multi-label (BLURB's HoC score is over label sets)"))
