"""Build, save and load the text classifier: a plain ``AutoModelForSequenceClassification``.

Training wraps it in :class:`ClassifierLoss` only to weigh the loss (``--class-weights
balanced``) or use binary cross-entropy (multi-label); what is saved is the inner model itself,
with ``id2label``/``label2id`` (and ``problem_type`` for multi-label data) in its config, the
tokenizer and ``bertkit.json`` (labels, thresholds, length settings). It loads with
``AutoModelForSequenceClassification.from_pretrained(path)`` (no custom code) and works with
``pipeline("text-classification", model=path)`` (multi-label: ``function_to_apply="sigmoid"`` and
the thresholds in ``bertkit.json``).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from bertkit.encoders import load_tokenizer
from bertkit.tasks.common import build_pretrained, read_saved_model, write_saved_model



class ClassifierLoss(nn.Module):
    """A sequence classifier plus the training loss the loop needs.

    Args:
        model: a ``*ForSequenceClassification`` model.
        weight: ``[C]`` per-label loss weights (None: unweighted).
        multi_label: binary cross-entropy on ``[B, C]`` float targets instead of softmax
            cross-entropy on ``[B]`` ids.
    """

    def __init__(self, model: nn.Module, weight: torch.Tensor | None = None,
                 multi_label: bool = False) -> None:
        super().__init__()
        self.model, self.multi_label = model, multi_label
        self.register_buffer("weight", weight if weight is not None else torch.ones(0),
                             persistent=False)

    def forward(self, input_ids, attention_mask, labels=None, token_type_ids=None) -> dict:
        """Logits ``[B, C]`` and, with ``labels`` (``[B]`` ids, -100 ignored; or ``[B, C]``
        floats), the mean loss."""
        kwargs = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs).logits
        out = {"logits": logits}
        if labels is not None:
            weight = self.weight if self.weight.numel() else None
            if self.multi_label:
                out["loss"] = nn.functional.binary_cross_entropy_with_logits(
                    logits.float(), labels.float(), pos_weight=None,
                    weight=weight[None, :] if weight is not None else None)
            else:
                out["loss"] = nn.functional.cross_entropy(logits.float(), labels, weight=weight,
                                                          ignore_index=-100)
        return out


def build_classifier(model_name: str, labels: list[str], multi_label: bool = False):
    """A fresh sequence-classification head over the encoder at ``model_name``.

    Returns:
        the ``AutoModelForSequenceClassification`` model (``id2label`` set).

    Raises:
        BertkitError: the encoder cannot be loaded.
    """
    from transformers import AutoModelForSequenceClassification

    kwargs = {"problem_type": "multi_label_classification"} if multi_label else {}
    return build_pretrained(AutoModelForSequenceClassification.from_pretrained, model_name,
                            "sequence classification", num_labels=len(labels),
                            id2label=dict(enumerate(labels)),
                            label2id={lab: i for i, lab in enumerate(labels)}, **kwargs)


def save_classifier(model: nn.Module, tokenizer, directory: str | Path, meta: dict) -> None:
    """Write the model (Hugging Face layout), tokenizer and ``bertkit.json`` to ``directory``."""
    write_saved_model(model.model if isinstance(model, ClassifierLoss) else model, tokenizer,
                      directory, "cls", meta)


def load_classifier(directory: str | Path):
    """Load what :func:`save_classifier` wrote (a run directory or its ``model/``).

    Returns:
        (model in eval mode, tokenizer, labels in id order, meta with ``path``).

    Raises:
        BertkitError: no saved bertkit cls model there, or its files cannot be loaded.
    """
    from transformers import AutoModelForSequenceClassification

    model, meta = read_saved_model(directory, "cls", "text-classification",
                                   AutoModelForSequenceClassification)
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    return model, load_tokenizer(meta["path"]), labels, meta
