"""Entity-level precision, recall and F1 with seqeval (Nakayama, 2018).

Two modes, always labelled:

* ``strict`` (IOB2): an entity counts only if its exact span and type match and it is well formed
  in IOB2; the headline figure.
* ``conlleval`` (seqeval's default mode): the lenient reading of the CoNLL-2000 ``conlleval``
  script, where e.g. an ``I-X`` after ``O`` opens an entity. Reported beside it.

Micro-averaged F1 over entities is the headline; macro-F1 (mean over types) and per-type rows come
with it. Token accuracy is reported as accuracy, never as F1.
"""

from __future__ import annotations

from typing import Sequence

from seqeval.metrics import accuracy_score, classification_report
from seqeval.scheme import IOB2


def _report(gold, pred, strict: bool) -> dict:
    kwargs = {"mode": "strict", "scheme": IOB2} if strict else {}
    return classification_report(gold, pred, output_dict=True, zero_division=0, **kwargs)


def entity_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict:
    """Entity P/R/F1 of predicted IOB2 tag sequences against gold ones.

    Args:
        gold: per sentence, the gold IOB2 tags (W_i strings).
        pred: per sentence, the predicted tags; must have the same lengths as ``gold``.

    Returns:
        ``{"precision", "recall", "f1"}`` (strict IOB2 micro average, in [0, 1]),
        ``"macro_f1"`` (strict), ``"conlleval_precision"``, ``"conlleval_recall"``,
        ``"conlleval_f1"`` (seqeval default mode), ``"token_accuracy"``, and ``"per_type"``:
        ``{type: {"precision", "recall", "f1", "support"}}`` in strict mode.

    Raises:
        ValueError: a sentence whose prediction length differs from its gold length.
    """
    gold = [list(g) for g in gold]
    pred = [list(p) for p in pred]
    if len(gold) != len(pred) or any(len(g) != len(p) for g, p in zip(gold, pred)):
        raise ValueError("every sentence needs exactly one predicted tag per gold tag")
    if not gold or not any(gold):
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "macro_f1": 0.0,
                "conlleval_precision": 0.0, "conlleval_recall": 0.0, "conlleval_f1": 0.0,
                "token_accuracy": 0.0, "per_type": {}}
    strict = _report(gold, pred, strict=True)
    lenient = _report(gold, pred, strict=False)
    micro, lmicro = strict["micro avg"], lenient["micro avg"]
    per_type = {
        name: {"precision": float(row["precision"]), "recall": float(row["recall"]),
               "f1": float(row["f1-score"]),
               "support": int(row["support"])}
        for name, row in strict.items() if not name.endswith(" avg")
    }
    return {
        "precision": float(micro["precision"]),
        "recall": float(micro["recall"]),
        "f1": float(micro["f1-score"]),
        "macro_f1": float(strict["macro avg"]["f1-score"]),
        "conlleval_precision": float(lmicro["precision"]),
        "conlleval_recall": float(lmicro["recall"]),
        "conlleval_f1": float(lmicro["f1-score"]),
        "token_accuracy": float(accuracy_score(gold, pred)),
        "per_type": per_type,
    }
