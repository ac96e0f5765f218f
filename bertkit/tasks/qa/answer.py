"""Answering with a QA model: the start/end logits of every window, the best span pooled over a
question's windows, the official scores and the prediction lines (moved out of
:mod:`bertkit.tasks.qa.task`, which re-exports them).

BERT's SQuAD setup (Devlin et al., 2019, §4.2-4.3) as Hugging Face ``run_qa.py`` decodes it:
:mod:`bertkit.tasks.qa.decode`; scores from :mod:`bertkit.metrics.qa`.
"""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from bertkit.predict.inference import run_batches, sorted_batches
from bertkit.metrics.qa import squad_scores
from bertkit.tasks.qa.data import QAExample
from bertkit.tasks.qa.decode import NEG, Answers, decode
from bertkit.tasks.qa.encoding import Features, collate, encode
from bertkit.tasks.qa.model import SpanLoss
from bertkit.training.devices import Runtime


def window_logits(model, features: Features, runtime: Runtime, pad_id: int,
                  batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Start and end logits ``[F, T]`` float32 of every window (``T`` the longest window;
    padding ``NEG``). Windows run sorted by length, each batch padded to its own longest."""
    inner = model.model if isinstance(model, SpanLoss) else model
    F = len(features)
    T = int(features.lengths.max()) if F else 1
    start = np.full((F, T), NEG, dtype=np.float32)
    end = np.full((F, T), NEG, dtype=np.float32)
    if not F:
        return start, end
    inner.eval()
    inner.to(runtime.device)

    def run(idx: np.ndarray) -> None:
        batch = runtime.to_device(collate(features, idx, pad_id, labels=False))
        with runtime.autocast():
            out = inner(**batch)
        width = batch["input_ids"].shape[1]
        mask = batch["attention_mask"].bool()
        s = out.start_logits.float().masked_fill(~mask, NEG).cpu().numpy()
        e = out.end_logits.float().masked_fill(~mask, NEG).cpu().numpy()
        start[idx, :width], end[idx, :width] = s, e

    run_batches(run, sorted_batches(features.lengths, batch_size), runtime.device)
    return start, end


def answer_questions(model, tokenizer, examples: Sequence[QAExample], settings: dict,
                     runtime: Runtime, batch_size: int = 64,
                     features: Features | None = None) -> tuple[Answers, Features]:
    """Encode (unless ``features`` are given), run and decode ``examples``.

    Args:
        settings: ``max_length``, ``doc_stride``, ``max_question_length``, ``n_best``,
            ``max_answer_length``.
    """
    if features is None:
        features = encode(examples, tokenizer, settings["max_length"], settings["doc_stride"],
                          settings["max_question_length"])
    start, end = window_logits(model, features, runtime, tokenizer.pad_token_id, batch_size)
    answers = decode(start, end, features, [x.context for x in examples], settings["n_best"],
                     settings["max_answer_length"])
    return answers, features


def score(examples: Sequence[QAExample], answers: Answers, v2: bool,
          threshold: float | None = 0.0) -> dict:
    """The official scores of ``answers`` (:func:`bertkit.metrics.qa.squad_scores`): v1.1, or
    v2.0 with ``threshold`` on the no-answer score difference and the best thresholds."""
    gold = {x.qid: x.answers for x in examples}
    if not v2:
        return squad_scores(gold, dict(zip(gold, answers.text)), "1.1")
    given = answers.final(threshold)
    return {**squad_scores(gold, dict(zip(gold, given)), "2.0",
                           na_scores=dict(zip(gold, answers.null_diff.tolist())),
                           span_predictions=dict(zip(gold, answers.text))),
            "threshold": threshold}


def prediction_lines(examples: Sequence[QAExample], answers: Answers, v2: bool,
                     threshold: float | None, gold: bool = False) -> str:
    """JSON lines, one per question: ``id``, ``answer`` (``""``: no answer), ``start``/``end``
    (character offsets ``[start, end)`` of the answer in the original context; -1 when empty),
    ``score`` (start + end logit of the best span), v2 also ``null_score_diff``; ``gold`` adds
    the gold answers."""
    given = answers.final(threshold if v2 else None)
    out = []
    for i, (ex, text) in enumerate(zip(examples, given)):
        rec = {"id": ex.qid, "answer": text,
               "start": int(answers.start[i]) if text else -1,
               "end": int(answers.end[i]) if text else -1,
               "score": round(float(answers.span_score[i]), 4)}
        if v2:
            rec["null_score_diff"] = round(float(answers.null_diff[i]), 4)
        if gold:
            rec["gold"] = ex.answers
        out.append(json.dumps(rec, ensure_ascii=False) + "\n")
    return "".join(out)
