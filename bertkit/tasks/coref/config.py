"""``finetune coref`` settings (light: no model code, so the command line can read the choices)."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.settings.options import (DEVICE, METRICS_OUTPUT, PRECISION, PREDICT_OUTPUT, SAVED_MODEL,
                             SPLIT, MAX_EVAL_SAMPLES, Commands, Option, option,
                             stream_options)
from bertkit.tasks.finetune_config import (FinetuneConfig, data_option, eval_batch_option,
                                           evaluate_data_option, input_option, max_eval_option,
                                           max_train_option, model_option, predictions_option)

INPUT_FORMATS = ("auto", "conll", "text", "jsonl")
PREDICT_CHUNK = 16
"""``predict coref``'s documents per chunk by default: ~2,000-word documents at about one a
second on a CPU core (docs/coref.md), so a chunk is seconds of work and a little memory."""
SINGLETONS = ("on", "off")

COMMANDS = Commands(
    finetune="""Fine-tune a start-to-end coreference model (Kirstain et al. 2021; Lee et al. family) on
    CoNLL-2012 documents, keep the best dev epoch (CoNLL F1 with singletons, reference scorer),
    score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.conll and
    model/ (encoder + tokenizer loadable with AutoModel/AutoTokenizer, coref.safetensors: the
    head, bertkit.json; README.md shows the plain-PyTorch code that runs it).
    """,
    evaluate="""Score a saved coreference model on a labelled split with the reference scorer's metrics:
    MUC, B-cubed, CEAF-m, CEAF-e, BLANC and CoNLL F1, with and without singletons.""",
    predict="""Find the entities of new documents with a saved coreference model: CoNLL-2012 (the
    coreference column filled in) or, with an .jsonl output or --output-format jsonl, JSON lines
    with each cluster's mentions as character offsets and text.""",
    evaluate_options=(
        SAVED_MODEL,
        evaluate_data_option("Registered set ({sets}; under $BERTKIT_DATA/coref/) or a directory "
                             "with train/dev/test .conll files or folders of them."),
        SPLIT, MAX_EVAL_SAMPLES, METRICS_OUTPUT,
        predictions_option("Also write the predicted clusters as CoNLL-2012 here."),
        DEVICE, PRECISION),
    predict_options=(
        SAVED_MODEL,
        input_option("CoNLL-2012 file (coreference column may be -), plain text (the whole file "
                     "one document) or JSON lines with 'text' (and optional 'id'), one document a "
                     "line; .gz too."),
        PREDICT_OUTPUT,
        Option("auto (by suffix and content), conll, text or jsonl.", ("--input-format",),
               name="input_format", type=str, choices=INPUT_FORMATS, default="auto"),
        Option("conll or jsonl (auto: jsonl for .jsonl output or input, else conll).",
               ("--output-format",), name="output_format", type=str,
               choices=("auto", "conll", "jsonl"), default="auto"),
        DEVICE, PRECISION,
        Option("Skip and count malformed documents and unreadable lines.",
               ("--skip-bad-lines",), name="skip_bad_lines", type=bool, default=False),
        *stream_options("Documents", PREDICT_CHUNK, "each is resolved whole, and the chunk "
                         "written")),
)


@dataclass
class CorefConfig(FinetuneConfig):
    """``finetune coref`` settings: the training-loop fields plus these.

    A batch is ``batch_size`` whole documents (each cut into independent segments of
    ``max_length`` pieces, Joshi et al. 2019 §3); a training document longer than
    ``max_train_segments`` segments is trained on a random run of that many consecutive segments
    each epoch (its mentions inside them), which bounds training memory; evaluation and
    prediction always read whole documents.

    Attributes:
        max_length: pieces per segment, ``[CLS]``/``[SEP]`` included (Joshi et al.: 128-512).
        max_span_width: longest candidate mention in words (longer gold mentions are counted in
            ``results.json`` and cannot be found).
        top_lambda: candidate mentions kept per word after mention scoring (Lee et al. 2018: 0.4).
        ffnn_size: width of the start/end projections (Kirstain et al. use the encoder's size).
        dropout: dropout on the projections.
        head_lr: peak learning rate of the (fresh) coreference head.
        max_train_segments: segments per training document at most (see above).
    """

    epochs: int = 10
    lr: float = 5e-5
    batch_size: int = 1
    data: str = data_option("litbank", "Registered set ({sets}; under $BERTKIT_DATA/coref/, "
                            "one folder of .conll files per split) or a directory with "
                            "train/dev/test .conll files or folders of them.")
    model: str | None = model_option()
    max_length: int = option(384, min=8, help="Subword pieces per segment incl. [CLS]/[SEP]; a "
                             "document is cut into independent segments, never truncated.")
    max_span_width: int = option(30, min=1, help="Longest candidate mention, in words.")
    top_lambda: float = option(0.4, min=0, help="Candidate mentions kept per word (Lee et al. "
                               "2018: 0.4).")
    ffnn_size: int = option(384, min=1, help="Width of the start/end projections.")
    dropout: float = option(0.3, min=0, help="Dropout on the projections.")
    head_lr: float | None = option(3e-4, help="Peak learning rate of the coreference head (fresh "
                                   "weights; Kirstain et al.: 3e-4 head, 1e-5 encoder).")
    max_train_segments: int = option(4, min=1, help="Segments per training document at most: a "
                                     "longer one trains on a random run of this many consecutive "
                                     "segments each epoch (bounds memory).")
    singletons: str = option("on", choices=SINGLETONS, help="on: predicted mentions without an "
                             "antecedent or anaphor are output as one-mention entities (LitBank "
                             "annotates them); off: only entities of two or more mentions.")
    eval_batch_size: int = eval_batch_option(1, "Documents")
    max_train_samples: int | None = max_train_option("documents")
    max_eval_samples: int | None = max_eval_option("documents")

    commands = COMMANDS

    def task_checks(self) -> tuple:
        return (("top_lambda", 0 < self.top_lambda <= 5, "a number in (0, 5]"),
                ("dropout", 0 <= self.dropout < 1, "a number in [0, 1)"),
                ("max_span_width", self.max_span_width >= 1, "an integer >= 1"),
                ("ffnn_size", self.ffnn_size >= 1, "an integer >= 1"),
                ("max_train_segments", self.max_train_segments >= 1, "an integer >= 1"),
                ("head_lr", self.head_lr is None or self.head_lr > 0, "a number > 0"))
