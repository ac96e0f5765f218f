"""``finetune ner`` settings (:class:`NERConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.settings.options import (DEVICE, MAX_EVAL_SAMPLES, METRICS_OUTPUT, PRECISION, PREDICT_OUTPUT,
                             SAVED_MODEL, SKIP_BAD_LINES, SPLIT, STREAM_OPTIONS, Commands, Option,
                             batch_size, option)
from bertkit.tasks.finetune_config import (FinetuneConfig, data_option, eval_batch_option,
                                           evaluate_data_option, input_option, max_eval_option,
                                           max_train_option, model_option, predictions_option)

METRICS = {"span": "f1", "token-macro": "token_macro_f1"}
"""``--metric`` choices and the dev metric each selects the best epoch by."""

COMMANDS = Commands(
    finetune="""Fine-tune an encoder for named-entity recognition (IOB2), keep the best dev epoch, score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.conll and
    model/ (loadable with AutoModelForTokenClassification and pipeline("token-classification")).
    The packaged MiniLM on bc5cdr trains with the settings chosen on its dev split (recipe
    bc5cdr-ner-minilm: lr 2e-4, CRF) unless a flag or --recipe says otherwise; other encoders and
    sets start from BERT-base's defaults (lr 5e-5, no CRF). The first line printed says where
    each setting came from.
    """,
    evaluate="""Score a saved NER model on a labelled split: entity precision, recall and F1 per type.""",
    predict="""Tag new text with a saved NER model; every input word gets exactly one tag.

    Streams: chunks of --chunk-size records, each written in input order when done, so memory
    stays flat whatever the input's size; .gz in and out. An interrupted run continues with
    --resume; --shard I/N and 'bertkit predict merge' split a corpus over processes or machines,
    --jobs N over this machine's cores.
    """,
    evaluate_options=(
        SAVED_MODEL,
        evaluate_data_option("Registered set ({sets}; under $BERTKIT_DATA) or a directory with "
                             "split files."),
        SPLIT, MAX_EVAL_SAMPLES, METRICS_OUTPUT,
        predictions_option("Also write token, gold, predicted as CoNLL here."),
        DEVICE, PRECISION, batch_size("Windows", 32)),
    predict_options=(
        SAVED_MODEL,
        input_option("CoNLL file (token first) or plain text, one sentence a line; .gz read as "
                     "gzip."),
        PREDICT_OUTPUT,
        Option("conll (token, gold if the input has it, predicted) or jsonl (line, tokens, tags, "
               "spans).", ("--format", "-f"), name="fmt", type=str, choices=("conll", "jsonl"),
               default="conll"),
        Option("auto, conll or text (one sentence a line).", ("--input-format",),
               name="input_format", type=str, choices=("auto", "conll", "text"), default="auto"),
        DEVICE, PRECISION, batch_size("Windows", 32),
        Option("Batches of up to N padded pieces (many short sentences, few long ones) instead "
               "of --batch-size windows; the same predictions.", ("--batch-tokens",),
               name="batch_tokens", type=int, min=1, default=None),
        Option("Pack short sentences into rows of at least N pieces with block-diagonal "
               "attention (no attention across sentences; 0: off); the same predictions.",
               ("--pack",), name="pack", type=int, min=0, default=0),
        Option("torch, onnx (ONNX Runtime fp32, the same predictions; exported once to "
               "model.onnx beside the model; needs pip install 'bertkit\\[onnx]') or onnx-int8 "
               "(dynamic int8 quantisation: faster, NOT the same predictions).",
               ("--backend",), name="backend", type=str, choices=("torch", "onnx", "onnx-int8"),
               default="torch"),
        SKIP_BAD_LINES, *STREAM_OPTIONS),
)


@dataclass
class NERConfig(FinetuneConfig):
    """``finetune ner`` settings: the training-loop fields plus these.

    Attributes:
        model: encoder directory or hub id (None: the packaged MiniLM encoder).
        data: registered set name or a directory with train/dev/test files.
        max_length: pieces per window, ``[CLS]``/``[SEP]`` included; longer sentences are windowed.
        crf: add a linear-chain CRF (decoding is constrained to valid IOB2 either way).
        label_all_subwords: train continuation pieces too (``B-X`` pieces after the first as ``I-X``).
        eval_batch_size: windows per forward pass when evaluating and predicting.
        pack: run training forward passes on packed rows (several sentences a row, block-diagonal
            attention, see :mod:`bertkit.inputs.packing`): random batches without padding work.
        pack_length: minimum tokens per packed row (a row is never shorter than the batch's
            longest window).
        length_group: training batches sorted by length together, as Hugging Face's
            ``group_by_length``; 1 gives random batches, as the stock recipe. Default (None): 1
            with packing, 50 without (length-sorted batches are nearly free of padding but
            homogeneous, which cost about 1 F1 point on BC5CDR; see README Results).
        max_train_samples / max_eval_samples: use only the first N sentences (quick runs).
        metric: the dev metric that selects the best epoch: ``span`` (entity F1, seqeval strict
            IOB2) or ``token-macro`` (token-level macro-F1 over the entity types, prefix
            dropped: the PICO figure of EBM-NLP, Nye et al. 2018, reported by SciBERT). Both
            are always reported.
    """

    data: str = data_option("bc5cdr", "Registered set ({sets}; under $BERTKIT_DATA) or a directory "
                            "with train/dev/test files.")
    model: str | None = model_option()
    crf: bool = option(False, flags=("--crf/--no-crf",), help="Linear-chain CRF over word scores.")
    label_all_subwords: bool = option(False, help="Train continuation pieces too (B- pieces after "
                                      "the first as I-).", flags=("--label-all-subwords",))
    max_length: int = option(512, min=8, help="Subword pieces per window incl. [CLS]/[SEP]; longer "
                             "input is windowed, never truncated.")
    eval_batch_size: int = eval_batch_option(32, "Windows")
    max_train_samples: int | None = max_train_option("sentences")
    max_eval_samples: int | None = max_eval_option("sentences")
    pack: bool = option(True, flags=("--pack/--no-pack",), help="Train on packed rows: several "
                        "sentences a row with block-diagonal attention, so random batches carry "
                        "no padding.")
    pack_length: int = option(64, min=8, help="Minimum tokens per packed row.")
    length_group: int | None = option(None, min=1, help="Batches sorted by length together (1: "
                                      "random batches).", shown="1 with --pack, 50 without")
    metric: str = option("span", choices=tuple(METRICS), help="Dev metric that picks the best "
                         "epoch: span (entity F1, seqeval strict IOB2) or token-macro (token-level "
                         "macro-F1 over the entity types: SciBERT's PICO figure for EBM-NLP). Both "
                         "are reported.")

    commands = COMMANDS

    def task_checks(self) -> tuple:
        return (("pack_length", self.pack_length >= 8, "an integer >= 8"),
                ("length_group", (self.length_group or 1) >= 1,
                 "an integer >= 1 (1: random batches)"))
