"""Build, save and load the QA model: a plain ``AutoModelForQuestionAnswering``
(``BertForQuestionAnswering`` for a BERT encoder: a linear layer giving a start and an end logit
per piece, Devlin et al., 2019, §4.2).

Training wraps it in :class:`SpanLoss` only for the loss the training loop reads; what is saved
is the inner model itself with the tokenizer and ``bertkit.json`` (window settings, SQuAD 2.0
mode and thresholds). It loads with ``AutoModelForQuestionAnswering.from_pretrained(path)``,
without bertkit and without remote code (the model card shows the few lines that answer a
question); ``pipeline("question-answering", model=path)`` works in transformers 4.x, whose
question-answering pipeline transformers 5 removed.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from bertkit.encoders import load_tokenizer
from bertkit.tasks.common import build_pretrained, read_saved_model, write_saved_model



class SpanLoss(nn.Module):
    """A ``*ForQuestionAnswering`` model plus the training loss: the mean of the start and end
    cross-entropies over the window's pieces (BERT §4.2), in float32."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids=None, start_positions=None,
                end_positions=None) -> dict:
        """``start_logits``/``end_logits`` ``[B, T]`` and, with gold positions ``[B]``, ``loss``."""
        kwargs = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        result = {"start_logits": out.start_logits, "end_logits": out.end_logits}
        if start_positions is not None:
            ce = nn.functional.cross_entropy
            result["loss"] = (ce(out.start_logits.float(), start_positions)
                              + ce(out.end_logits.float(), end_positions)) / 2
        return result


def build_qa_model(model_name: str):
    """A ``AutoModelForQuestionAnswering`` over ``model_name``: a fresh span head on a plain
    encoder, or the trained one of an earlier QA model.

    Raises:
        BertkitError: the model cannot be loaded.
    """
    from transformers import AutoModelForQuestionAnswering

    return build_pretrained(AutoModelForQuestionAnswering.from_pretrained, model_name,
                            "question answering")


def save_qa_model(model: nn.Module, tokenizer, directory: str | Path, meta: dict) -> None:
    """Write the model (Hugging Face layout), tokenizer and ``bertkit.json`` to ``directory``."""
    write_saved_model(model.model if isinstance(model, SpanLoss) else model, tokenizer,
                      directory, "qa", meta)


def load_qa_model(directory: str | Path):
    """Load what :func:`save_qa_model` wrote (a run directory or its ``model/``).

    Returns:
        (model in eval mode, tokenizer, meta with ``path``).

    Raises:
        BertkitError: no saved bertkit QA model there, or its files cannot be loaded.
    """
    from transformers import AutoModelForQuestionAnswering

    model, meta = read_saved_model(directory, "qa", "question-answering",
                                   AutoModelForQuestionAnswering)
    return model, load_tokenizer(meta["path"]), meta


def logits_of(model: nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """``(start_logits, end_logits)`` ``[B, T]`` of either the wrapper or the plain model."""
    inner = model.model if isinstance(model, SpanLoss) else model
    out = inner(**batch)
    return out.start_logits, out.end_logits
