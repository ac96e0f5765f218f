"""``finetune qa`` settings (:class:`QAConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.tasks.finetune_config import FinetuneConfig

UNANSWERABLE = ("auto", "on", "off")


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
        max_train_samples / max_eval_samples: use only the first N questions (quick runs).
    """

    model: str | None = None
    data: str = "squad"
    max_length: int = 384
    doc_stride: int = 128
    max_question_length: int = 64
    max_answer_length: int = 30
    n_best: int = 20
    unanswerable: str = "auto"
    null_threshold: float = 0.0
    eval_batch_size: int = 64
    length_group: int = 50
    max_train_samples: int | None = None
    max_eval_samples: int | None = None

    def task_checks(self) -> tuple:
        budget = self.max_length - self.max_question_length - 3
        return (("unanswerable", self.unanswerable in UNANSWERABLE, " or ".join(UNANSWERABLE)),
                ("max_question_length", self.max_question_length >= 1, "an integer >= 1"),
                ("max_answer_length", self.max_answer_length >= 1, "an integer >= 1"),
                ("n_best", self.n_best >= 1, "an integer >= 1"),
                ("length_group", self.length_group >= 1, "an integer >= 1 (1: random batches)"),
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
