"""The ``finetune cls`` model card (:mod:`bertkit.outputs.modelcard`) and the scoring note of
``results.json``: usage snippets for single- and multi-label classifiers, BLURB's HoC F1 as an
optional card metric."""

from __future__ import annotations

import json

from bertkit.outputs.modelcard import CardSpec, Metric

SCORING = ("scikit-learn: macro_f1 = unweighted mean F1 over labels present in gold or "
           "predictions (SciBERT's metric); micro_f1 pooled over all labels (= accuracy for "
           "single-label data); multi-label: accuracy = exact label set")
HOC_SCORING = ("; hoc_f1 = BLURB's HoC score (Gu et al. 2021): micro-F1 over the document x "
               "label indicator matrix, a document's sentences' labels pooled by the id prefix")



DEFAULT_EXAMPLE = {"text": "We use the parser of Collins ( 1997 ) to parse the corpus ."}
EXAMPLE_CHARS = 300  # a card's example text is cut at a word boundary after this many


def _shorten(text: str) -> str:
    if len(text) <= EXAMPLE_CHARS:
        return text
    return text[:EXAMPLE_CHARS].rsplit(" ", 1)[0] + " ..."


def card_example(train) -> dict[str, str]:
    """The card's example input, from the model's own training set: the first example's text
    (and its pair text for a sentence-pair model), cut to :data:`EXAMPLE_CHARS` characters.

    Args:
        train: the training examples (``.text``, ``.text_pair``).
    """
    if not train:
        return dict(DEFAULT_EXAMPLE)
    first = train[0]
    example = {"text": _shorten(first.text)}
    if getattr(first, "text_pair", None):
        example["text_pair"] = _shorten(first.text_pair)
    return example


def _example_input(results: dict) -> str:
    """The example as Python source: a string, or ``{"text": ..., "text_pair": ...}`` for a
    sentence-pair model (the form the text-classification pipeline takes for a pair)."""
    example = results.get("example") or DEFAULT_EXAMPLE
    if example.get("text_pair"):
        return ("{" + f'"text": {json.dumps(example["text"], ensure_ascii=False)}, '
                f'"text_pair": {json.dumps(example["text_pair"], ensure_ascii=False)}' + "}")
    return json.dumps(example["text"], ensure_ascii=False)


def _card_usage(results: dict) -> str:
    """The card's usage snippet on an example from the model's training set: a pipeline; for a
    multi-label classifier every label's sigmoid score (``top_k=None``), then the per-label
    thresholds chosen on dev, so the snippet predicts what ``bertkit predict cls`` predicts."""
    example = _example_input(results)
    if not results.get("multi_label"):
        return ('from transformers import pipeline\n\n'
                'clf = pipeline("text-classification", model="{path}"{remote})\n'
                f'clf({example})')
    labels = list(results.get("labels") or [])
    saved = (results.get("test") or {}).get("thresholds") or [0.5] * len(labels)
    thresholds = {lab: round(float(t), 6) for lab, t in zip(labels, saved)}
    return ('from transformers import pipeline\n\n'
            'clf = pipeline("text-classification", model="{path}", top_k=None,\n'
            '               function_to_apply="sigmoid"{remote})\n'
            f'thresholds = {json.dumps(thresholds, ensure_ascii=False)}  # per label, from dev\n'
            f'scores = clf([{example}])[0]\n'
            'predicted = [s["label"] for s in scores if s["score"] >= thresholds[s["label"]]]')


def _card_notes(results: dict) -> list[str]:
    if not results.get("multi_label"):
        return []
    return ["A multi-label model (`problem_type=\"multi_label_classification\"` in its config): "
            "`top_k=None` returns every label's sigmoid score, and each label whose score reaches "
            "its threshold (chosen on dev, saved in `bertkit.json`) is predicted, as `bertkit "
            "predict cls` does. Without `top_k=None` the pipeline returns only the top label.",
            "Its accuracy is exact-set (subset) accuracy: an example counts only where the "
            "predicted label set equals the gold set; macro- and micro-F1 are over the example x "
            "label indicator matrix."]


CARD = CardSpec(
    "finetune cls", "text-classification", "Text classification",
    "AutoModelForSequenceClassification",
    (Metric("macro_f1", "f1", "macro-F1 (scikit-learn, unweighted mean over labels)", "macro-F1"),
     Metric("micro_f1", "f1", "micro-F1", "micro-F1"),
     Metric("accuracy", "accuracy", "accuracy", "accuracy")),
    _card_usage, notes=_card_notes,
    optional_metrics=(Metric("hoc_f1", "f1", "HoC F1 (BLURB: micro-F1 over documents x labels)",
                             "HoC F1"),))
"""The model card (:mod:`bertkit.outputs.modelcard`); its metrics are the task's headline metrics."""
