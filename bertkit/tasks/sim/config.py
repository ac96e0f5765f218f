"""``finetune sim`` settings (:class:`SimConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.settings.options import (DEVICE, MAX_EVAL_SAMPLES, METRICS_OUTPUT, PRECISION, PREDICT_OUTPUT, SAVED_MODEL,
                             SKIP_BAD_LINES, SPLIT, STREAM_OPTIONS, Commands, Option, batch_size,
                             option)
from bertkit.tasks.finetune_config import (FinetuneConfig, data_option, eval_batch_option,
                                           evaluate_data_option, input_option, max_eval_option,
                                           max_train_option, model_option, predictions_option,
                                           skip_bad_lines_option)

SELECT = ("pearson", "spearman")  # dev metrics that can pick the best epoch
ARCHITECTURES = ("cross-encoder", "bi-encoder")  # bertkit.tasks.sim.biencoder.ARCHITECTURES
OBJECTIVES = ("cosine", "cosent")  # a bi-encoder's training objective

COMMANDS = Commands(
    finetune="""Fine-tune an encoder for sentence-pair similarity (a regression: BIOSSES, STS-style
    sets), keep the best dev epoch (Pearson r), score test: Pearson r (BLURB's metric), Spearman
    rho and mean squared error.

    --architecture bi-encoder trains a Sentence-BERT bi-encoder instead: each text pooled
    alone (the encoder's own pooling, else mean), the cosine of the two embeddings as the score,
    trained on the cosine objective (gold scaled to [0, 1]) or CoSENT. Every run also prints
    and keeps the zero-shot row: the encoder as given, cosine of its pooled embeddings.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.jsonl and
    model/ (cross-encoder: a plain AutoModelForSequenceClassification with one output and
    problem_type "regression", its logit the predicted score; bi-encoder: a
    sentence-transformers folder whose root is a plain AutoModel).
    """,
    evaluate="""Score a saved similarity model on a labelled split: Pearson r, Spearman rho, MSE.
    With --zero-shot, --model names an encoder scored as given: the cosine of its pooled
    embeddings (its own pooling, else mean), no training (MTEB's STS protocol).""",
    predict="""Predict the similarity score of each text pair: JSON lines, the input object with
    "predicted" (the score, in the training scores' units).""",
    evaluate_options=(
        SAVED_MODEL,
        evaluate_data_option("Registered set ({sets}; under $BERTKIT_DATA/sim/) or a directory "
                             "with split .jsonl files."),
        SPLIT, MAX_EVAL_SAMPLES, METRICS_OUTPUT,
        predictions_option("Also write each pair with its predicted score as JSON lines here."),
        Option("--model is an encoder (directory or hub id), scored as given: cosine of its "
               "pooled embeddings, no training.", ("--zero-shot",), name="zero_shot", type=bool,
               default=False),
        SKIP_BAD_LINES, DEVICE, PRECISION, batch_size("Pairs", 64)),
    predict_options=(
        SAVED_MODEL,
        input_option("JSON lines: one object a line with the two texts (fields as trained); a "
                     "score is optional."),
        PREDICT_OUTPUT, SKIP_BAD_LINES, DEVICE, PRECISION, batch_size("Pairs", 64),
        *STREAM_OPTIONS),
)


@dataclass
class SimConfig(FinetuneConfig):
    """``finetune sim`` settings: the training-loop fields plus these.

    Attributes:
        model: encoder directory or hub id (None: the packaged MiniLM encoder).
        data: registered set (``biosses``) or a directory with train/dev/test ``.jsonl``.
        text_column / text_pair_column / score_column: field names of the two texts and the
            gold score (a JSON number).
        max_length: pieces per pair, ``[CLS]``/``[SEP]`` included; longer pairs are cut longest
            first (the tokenizer's ``longest_first``), counted and reported. A bi-encoder cuts
            each text to it alone.
        architecture: ``cross-encoder`` (the pair through the encoder together, a regression
            head; BERT's STS-B setup) or ``bi-encoder`` (Sentence-BERT, Reimers and Gurevych
            2019: each text pooled alone, the cosine as the score).
        objective: a bi-encoder's loss: ``cosine`` (MSE of the cosine against the gold scaled
            to [0, 1], sentence-transformers' CosineSimilarityLoss) or ``cosent`` (CoSENT, Su
            2022: a ranking loss over the batch's pairs).
    """

    data: str = data_option("biosses", "Registered set ({sets}; under $BERTKIT_DATA/sim/) or a "
                            "directory with train/dev/test .jsonl (text, text_pair, score).")
    model: str | None = model_option()
    text_column: str = option("text", help="Field holding the first text.")
    text_pair_column: str = option("text_pair", help="Field holding the second text.")
    score_column: str = option("score", help="Field holding the gold score (a number).")
    metric: str = option("pearson", choices=SELECT, help="Dev metric that picks the best epoch: "
                         "pearson (BLURB's BIOSSES metric) or spearman (the STS literature's).")
    skip_bad_lines: bool = skip_bad_lines_option()
    architecture: str = option("cross-encoder", choices=ARCHITECTURES, help="cross-encoder "
                               "(the pair together, a regression head) or bi-encoder (each "
                               "text pooled alone, the cosine as the score).")
    objective: str = option("cosine", choices=OBJECTIVES, help="Bi-encoder loss: cosine (MSE "
                            "of the cosine against the gold scaled to [0, 1]) or cosent.")
    max_length: int = option(256, min=8, help="Pieces per pair incl. [CLS]/[SEP]; longer pairs "
                             "are cut longest first, counted and reported.")
    eval_batch_size: int = eval_batch_option(64, "Pairs")
    max_train_samples: int | None = max_train_option("pairs")
    max_eval_samples: int | None = max_eval_option("pairs")

    commands = COMMANDS

    def task_checks(self) -> tuple:
        return tuple((name, bool(getattr(self, name).strip()), "a field name")
                     for name in ("text_column", "text_pair_column", "score_column"))
