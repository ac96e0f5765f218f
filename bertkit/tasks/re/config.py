"""``finetune re`` settings."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.settings.options import (CONFUSION, DEVICE, MAX_EVAL_SAMPLES, METRICS_OUTPUT, PRECISION,
                             PREDICT_OUTPUT, SAVED_MODEL, SKIP_BAD_LINES, SPLIT, STREAM_OPTIONS,
                             Commands, Option, batch_size, option)
from bertkit.tasks.common import CLASS_WEIGHTS
from bertkit.tasks.finetune_config import (FinetuneConfig, data_option, eval_batch_option,
                                           evaluate_data_option, input_option, max_eval_option,
                                           max_train_option, model_option, predictions_option,
                                           skip_bad_lines_option)

POOLINGS = ("cls", "entity-start")
"""``--pooling`` choices: :data:`bertkit.heads.relation.POOLINGS`, repeated so that this light
module imports no model code (tests/cli/test_choices.py checks the two agree)."""

COMMANDS = Commands(
    finetune="""Fine-tune an encoder for relation classification between two marked entities.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.jsonl,
    test_confusion.{csv,png} and model/ (AutoTokenizer and AutoModelForSequenceClassification;
    pipeline("text-classification") with --pooling cls, trust_remote_code=True with entity-start).
    The packaged MiniLM on chemprot trains with the settings chosen for it (recipe
    chemprot-re-minilm: lr 2e-4) unless a flag or --recipe says otherwise; other encoders and sets
    start from BERT-base's defaults (lr 5e-5). The first line printed says where each setting
    came from.
    """,
    evaluate="""Score a saved relation model on a labelled split: micro/macro-F1, accuracy, per label.""",
    predict="""Classify entity pairs with a saved relation model: JSON lines with predicted and probability.""",
    evaluate_options=(
        SAVED_MODEL,
        evaluate_data_option("Registered set ({sets}; under $BERTKIT_DATA/re/) or a directory with "
                             "split .jsonl files."),
        SPLIT, MAX_EVAL_SAMPLES, METRICS_OUTPUT,
        predictions_option("Also write each pair with its predicted label as JSON lines here."),
        CONFUSION,
        Option("Label left out of micro/macro-F1 (auto, a label, or -). \\[default: the one saved "
               "with the model]", ("--negative-label",), name="negative_label", type=str),
        SKIP_BAD_LINES, DEVICE, PRECISION, batch_size("Pairs", 64)),
    predict_options=(
        SAVED_MODEL,
        input_option("JSON lines (marker, span or TACRED form; label optional) or plain text, one "
                     "<< >>/[[ ]]-marked sentence a line."),
        PREDICT_OUTPUT,
        Option("auto, jsonl or text.", ("--input-format",), name="input_format", type=str,
               choices=("auto", "jsonl", "text"), default="auto"),
        SKIP_BAD_LINES, DEVICE, PRECISION, batch_size("Pairs", 64), *STREAM_OPTIONS),
)


@dataclass
class REConfig(FinetuneConfig):
    """``finetune re`` settings: the training-loop fields plus these.

    Attributes:
        model: BERT-architecture encoder directory or hub id (None: the packaged MiniLM encoder).
        data: registered set name (``chemprot``) or a directory with train/dev/test ``.jsonl``.
        pooling: ``cls`` (SciBERT's setting) or ``entity-start`` (states at ``[E1]`` and ``[E2]``
            concatenated, Baldini Soares et al., 2019). ``cls`` is the default because it scored
            higher on ChemProt dev in a short run with the packaged MiniLM (54.17 vs 40.67
            micro-F1; 1,500 training pairs, 1 epoch), confirmed at the benchmark's settings (dev
            59.33 vs 50.00; 500 pairs, 2 epochs; see README).
        typed_markers: one marker pair per entity type (``[E1:CHEMICAL]``) when the data gives
            types (span/TACRED forms); untyped markers otherwise.
        negative_label: the "no relation" label left out of micro/macro-F1: ``auto`` (one of
            no_relation, false, none, NA, other, negative if present), a label, or ``-`` for none.
        class_weights: ``balanced`` weighs each label's loss by ``N / (C * count)`` (scikit-learn's
            ``balanced``, as ``finetune cls``; the negative label is weighted like any other) for
            a classifier that collapses to the majority label; ``none``: plain cross-entropy.
        max_length: pieces per input incl. markers and ``[CLS]``/``[SEP]``; longer inputs are cut
            around the two entities (both always kept).
        skip_bad_lines: skip (and count) unreadable lines instead of stopping before training.
        eval_batch_size: pairs per forward pass when evaluating and predicting.
        max_train_samples / max_eval_samples: use only the first N pairs (quick runs).
    """

    data: str = data_option("chemprot", "Registered set ({sets}; under $BERTKIT_DATA/re/) or a "
                            "directory with train/dev/test.jsonl.")
    model: str | None = model_option()
    pooling: str = option("cls", choices=POOLINGS, help="cls (SciBERT; scored higher on ChemProt "
                          "dev in a short run) or entity-start (states at the two opening markers, "
                          "Baldini Soares et al. 2019).")
    typed_markers: bool = option(False, flags=("--typed-markers/--untyped-markers",),
                                 help="One marker pair per entity type, when the data gives "
                                 "types.", shown="untyped")
    negative_label: str = option("auto", help="Label left out of micro/macro-F1: auto "
                                 "(no_relation, false, ... when present), a label, or - for none.")
    class_weights: str = option("none", choices=CLASS_WEIGHTS, help="none, or balanced (loss "
                                "weight N/(C*count) per label, as finetune cls; for a classifier "
                                "that collapses to the majority label).")
    skip_bad_lines: bool = skip_bad_lines_option()
    max_length: int = option(512, min=8, help="Pieces per input incl. markers and [CLS]/[SEP]; "
                             "longer inputs are cut around the two entities, both always kept.")
    eval_batch_size: int = eval_batch_option(64, "Pairs")
    max_train_samples: int | None = max_train_option("pairs")
    max_eval_samples: int | None = max_eval_option("pairs")

    commands = COMMANDS

    def task_checks(self) -> tuple:
        return (("negative_label", bool(self.negative_label.strip()), "auto, a label or -"),)
