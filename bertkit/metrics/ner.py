"""Entity-level precision, recall and F1 with seqeval (Nakayama, 2018).

Two modes, always labelled:

* ``strict`` (IOB2): an entity counts only if its exact span and type match and it is well formed
  in IOB2; the headline figure.
* ``conlleval`` (seqeval's default mode): the lenient reading of the CoNLL-2000 ``conlleval``
  script, where e.g. an ``I-X`` after ``O`` opens an entity. Reported beside it.

Micro-averaged F1 over entities is the headline; macro-F1 (mean over types) and per-type rows come
with it. Token accuracy is reported as accuracy, never as F1.

Token-level scores (:func:`token_scores`, also in :func:`entity_scores`' output): each word's
entity type, prefix dropped (``B-PAR``/``I-PAR`` -> ``PAR``, ``O`` -> none), scored per type with
scikit-learn; ``token_macro_f1`` is the unweighted mean over the types. This is the PICO figure of
EBM-NLP (Nye et al., 2018) that SciBERT reports (Beltagy et al., 2019, Table 1: 71.18): on an
IO-tagged release dropping the prefix gives back the original ``I-`` classes exactly.
"""

from __future__ import annotations

from typing import Sequence

from sklearn.metrics import precision_recall_fscore_support
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
        ``"conlleval_f1"`` (seqeval default mode), ``"token_accuracy"``, ``"per_type"``:
        ``{type: {"precision", "recall", "f1", "support"}}`` in strict mode, and the token-level
        ``"token_macro_f1"``, ``"token_micro_f1"``, ``"token_per_type"`` of :func:`token_scores`.

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
                "token_accuracy": 0.0, "per_type": {}, "token_macro_f1": 0.0,
                "token_micro_f1": 0.0, "token_per_type": {}}
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
        **token_scores(gold, pred),
    }


def token_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict:
    """Token-level F1 per entity type, prefix dropped (see module docstring).

    Args:
        gold, pred: per sentence, the tags (any of IO, IOB1, IOB2, IOBES; W_i strings), same
            lengths.

    Returns:
        ``token_macro_f1`` (mean F1 over the types in gold or predictions), ``token_micro_f1``
        (pooled over those types, ``O`` words count only as false positives/negatives) and
        ``token_per_type`` ``{type: {precision, recall, f1, support}}``; support = gold words.

    Raises:
        ValueError: a sentence whose prediction length differs from its gold length.

    >>> token_scores([["I-PAR", "I-PAR", "O"]], [["B-PAR", "O", "O"]])["token_macro_f1"]
    0.6666666666666666
    """
    if len(gold) != len(pred) or any(len(g) != len(p) for g, p in zip(gold, pred)):
        raise ValueError("every sentence needs exactly one predicted tag per gold tag")
    g = [t.split("-", 1)[1] if t != "O" else "O" for s in gold for t in s]
    p = [t.split("-", 1)[1] if t != "O" else "O" for s in pred for t in s]
    types = sorted((set(g) | set(p)) - {"O"})
    out = {"token_macro_f1": 0.0, "token_micro_f1": 0.0, "token_per_type": {}}
    if not types:
        return out
    out["token_macro_f1"] = float(precision_recall_fscore_support(
        g, p, labels=types, average="macro", zero_division=0)[2])
    out["token_micro_f1"] = float(precision_recall_fscore_support(
        g, p, labels=types, average="micro", zero_division=0)[2])
    pr, rc, f, sup = precision_recall_fscore_support(g, p, labels=types, average=None,
                                                     zero_division=0)
    out["token_per_type"] = {t: {"precision": float(pr[i]), "recall": float(rc[i]),
                                 "f1": float(f[i]), "support": int(sup[i])}
                             for i, t in enumerate(types)}
    return out
