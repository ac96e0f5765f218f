"""``finetune qa`` settings (:class:`QAConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.settings.options import (MAX_EVAL_SAMPLES, DEVICE, METRICS_OUTPUT, PRECISION, PREDICT_OUTPUT, SAVED_MODEL,
                             SKIP_BAD_LINES, SPLIT, STREAM_OPTIONS, Commands, Option, batch_size,
                             option)
from bertkit.tasks.finetune_config import (FinetuneConfig, data_option, eval_batch_option,
                                           evaluate_data_option, input_option, max_eval_option,
                                           max_train_option, model_option, predictions_option)

UNANSWERABLE = ("auto", "on", "off")

COMMANDS = Commands(
    finetune="""Fine-tune an encoder for extractive question answering (SQuAD 1.1/2.0 style), keep the
    best dev epoch (F1, official SQuAD scorer), score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.jsonl and
    model/ (a plain AutoModelForQuestionAnswering, loadable without bertkit or remote code; its
    README.md shows how; pipeline("question-answering") exists in transformers 4.x only).
    The packaged MiniLM on squad trains with the settings chosen for it (recipe squad-qa-minilm:
    lr 2e-4, batch 12, 2 epochs) unless a flag or --recipe says otherwise; other encoders and sets
    start from BERT-base's defaults (lr 5e-5, batch 32). The first line printed says where each
    setting came from.
    """,
    evaluate="""Score a saved QA model on a labelled split with the official SQuAD scorer: EM and F1
    (SQuAD 2.0: also HasAns/NoAns and the best threshold).""",
    predict="""Answer questions over their contexts with a saved QA model: JSON lines with id, answer,
    start/end (character offsets into the original context; -1 when empty) and score (start +
    end logit).""",
    evaluate_options=(
        SAVED_MODEL,
        evaluate_data_option("Registered set ({sets}; under $BERTKIT_DATA/qa/) or a directory with "
                             "split .json (SQuAD JSON) or .jsonl files."),
        SPLIT, MAX_EVAL_SAMPLES, METRICS_OUTPUT,
        predictions_option("Also write each question's answer (id, answer, start, end, score, "
                           "gold) as JSON lines here."),
        Option("SQuAD 2.0: answer empty when null score - best span score is above this. "
               "\\[default: the one saved with the model]", ("--null-threshold",),
               name="null_threshold", type=float),
        DEVICE, PRECISION, batch_size("Windows", 64)),
    predict_options=(
        SAVED_MODEL,
        input_option("JSON lines with id, question, context (answers optional) or SQuAD JSON."),
        PREDICT_OUTPUT,
        Option("SQuAD 2.0 models: answer empty when null score - best span score is above this. "
               "\\[default: the one saved with the model]", ("--null-threshold",),
               name="null_threshold", type=float),
        DEVICE, PRECISION, batch_size("Windows", 64), SKIP_BAD_LINES, *STREAM_OPTIONS),
)


@dataclass
class QAConfig(FinetuneConfig):
    """``finetune qa`` settings: the training-loop fields plus these.

    Attributes:
        model: encoder directory or hub id, or an earlier ``finetune qa`` run (its directory or
            ``model/``: the two-stage route, SQuAD first, then a domain set); None: the packaged
            MiniLM encoder.
        data: registered set (``squad``, ``squad-v2``, ``covid-qa``) or a directory with
            train/dev/test ``.json`` (SQuAD JSON) or ``.jsonl`` (``datasets`` JSON lines).
        max_length: pieces per window (question, context slice and special pieces); 384 as
            Hugging Face ``run_qa.py``.
        doc_stride: overlap in pieces between consecutive windows of a long context (Hugging
            Face's meaning, not the step of Google's ``run_squad.py``); 128 as ``run_qa.py``.
        max_question_length: pieces a question keeps (longer ones are cut, counted); 64 as
            BERT's ``max_query_length``.
        max_answer_length: most pieces in a predicted answer (30).
        n_best: start and end candidates per window (20).
        unanswerable: SQuAD 2.0 mode (no-answer scores and an empty answer above the threshold):
            ``auto`` switches it on when the training data has unanswerable questions (and says
            so), ``on``/``off`` force it (``off`` refuses data with unanswerable questions).
        null_threshold: SQuAD 2.0: answer empty when ``null score - best span score`` is above
            this (BERT's ``null_score_diff_threshold``, 0.0); the best threshold on dev is
            reported beside it and saved with the model.
        eval_batch_size: windows per forward pass when evaluating.
        length_group: training batches sorted by length together (1: random batches).
        null_window_rate: share of the windows of answerable questions that do not hold the answer
            kept in training, drawn afresh each epoch (Alberti et al., 2019, BERT-joint's
            ``include_unknowns``); 1 keeps every window, as ``run_qa.py``. Windows of
            unanswerable questions are always kept. For long contexts (COVID-QA: ~32 windows a
            question, ~1.4 hold the answer) it cuts the windows trained per question.
        max_train_samples / max_eval_samples: use only the first N questions (quick runs).
    """

    data: str = data_option("squad", "Registered set ({sets}; under $BERTKIT_DATA/qa/) or a "
                            "directory with train/dev/test .json (SQuAD JSON: data -> paragraphs "
                            "-> qas) or .jsonl (the datasets export: id, title, context, question, "
                            "answers{text, answer_start}).")
    model: str | None = model_option("Encoder directory or hub id, or an earlier `finetune qa` run "
                                     "(its directory or model/) to fine-tune further, e.g. SQuAD "
                                     "first, then a domain set.")
    max_length: int = option(384, min=8, help="Pieces per window: [CLS] question [SEP] context "
                             "slice [SEP]; a longer context is read whole in several windows.")
    doc_stride: int = option(128, min=0, help="OVERLAP in pieces between consecutive windows of "
                             "one context (Hugging Face run_qa.py's meaning), not the step between "
                             "window starts (Google's run_squad.py and SpanBERT).")
    max_question_length: int = option(64, min=1, help="Pieces a question keeps; longer questions "
                                      "are cut (counted), never an error.")
    max_answer_length: int = option(30, min=1, help="Most pieces in a predicted answer.")
    n_best: int = option(20, min=1, help="Start and end candidates per window when decoding.")
    unanswerable: str = option("auto", choices=UNANSWERABLE, help="SQuAD 2.0 mode (no-answer "
                               "score, empty answers): auto (on when the data has unanswerable "
                               "questions, and said so), on, or off (refuses data with "
                               "unanswerable questions).")
    null_threshold: float = option(0.0, help="SQuAD 2.0: answer empty when null score - best span "
                                   "score is above this; the best threshold on dev is reported "
                                   "beside it.")
    eval_batch_size: int = eval_batch_option(64, "Windows")
    length_group: int = option(50, min=1, help="Training batches sorted by length together (1: "
                               "random batches).")
    null_window_rate: float = option(1.0, help="Probability, in (0, 1], of keeping each "
                                     "training window that lacks its question's answer, drawn "
                                     "afresh each epoch (BERT-joint's include_unknowns); windows "
                                     "with the answer and those of unanswerable questions are "
                                     "always kept. 1: all, as run_qa.py; long contexts train "
                                     "faster below 1.")
    max_train_samples: int | None = max_train_option("questions")
    max_eval_samples: int | None = max_eval_option("questions")

    commands = COMMANDS

    def task_checks(self) -> tuple:
        budget = self.max_length - self.max_question_length - 3
        return (("max_question_length", self.max_question_length >= 1, "an integer >= 1"),
                ("max_answer_length", self.max_answer_length >= 1, "an integer >= 1"),
                ("n_best", self.n_best >= 1, "an integer >= 1"),
                ("length_group", self.length_group >= 1, "an integer >= 1 (1: random batches)"),
                ("null_window_rate", 0.0 < self.null_window_rate <= 1.0,
                 "a share in (0, 1] (1: every window)"),
                ("max_length", budget >= 1,  # else the tokenizer fails on a long question
                 f"a window with room for context: --max-length {self.max_length} minus "
                 f"--max-question-length {self.max_question_length} (the question's pieces) "
                 f"minus 3 special pieces leaves {budget} for context; --max-length at least "
                 f"{self.max_question_length + 4 + self.doc_stride} (with --doc-stride "
                 f"{self.doc_stride}), or a smaller --max-question-length"),
                ("doc_stride", 0 <= self.doc_stride < max(budget, 1),
                 f"an overlap below the context budget of a window, --max-length minus "
                 f"--max-question-length minus 3 = {budget}"))

    def validate(self) -> None:
        """Check every setting; an earlier QA run's directory as ``model`` becomes its
        ``model/`` folder (the two-stage route).

        Raises:
            BertkitError: naming the option out of range.
        """
        if self.model and (Path(self.model).expanduser() / "model" / "bertkit.json").is_file():
            self.model = str(Path(self.model).expanduser() / "model")
        super().validate()
