"""Relation classification over a BERT encoder with entity markers (self-contained module).

Pooling (``config.relation_pooling``):

* ``cls``: the final hidden state of ``[CLS]`` (SciBERT's setting for ChemProt, Beltagy et al.,
  2019, which feeds the ``[CLS]`` vector to a linear classifier).
* ``entity-start``: the concatenation of the final hidden states at the two opening markers
  ``[E1]`` and ``[E2]`` ("Entity markers - Entity start", Baldini Soares et al., 2019, sec. 3.3 and
  fig. 3f).

Then dropout and one linear layer. The marker token ids are kept in the config
(``subject_start_ids`` / ``object_start_ids``, several when markers are typed), so the model
finds the pooling positions in ``input_ids`` by itself: the saved directory loads with
``AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True)`` and this
file is copied beside the weights. This module therefore imports only torch and transformers.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import BertModel
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertPreTrainedModel

POOLINGS = ("cls", "entity-start")


def entity_start_positions(input_ids: torch.Tensor, subject_ids: torch.Tensor,
                           object_ids: torch.Tensor) -> torch.Tensor:
    """Positions of the first subject-start and first object-start marker in each row.

    Args:
        input_ids: ``[B, T]`` token ids.
        subject_ids / object_ids: ``[S]`` / ``[O]`` ids of the opening markers (one per type).

    Returns:
        ``[B, 2]`` long positions; 0 (the ``[CLS]`` position) where a row has no such marker.
    """
    out = []
    for ids in (subject_ids, object_ids):
        hit = torch.isin(input_ids, ids.to(input_ids.device))
        out.append(hit.int().argmax(dim=1))  # first True; 0 when none
    return torch.stack(out, dim=1)


def pool(hidden: torch.Tensor, pooling: str, entity_pos: torch.Tensor | None = None) -> torch.Tensor:
    """The relation representation from encoder states.

    Args:
        hidden: ``[B, T, H]`` final hidden states.
        pooling: ``cls`` or ``entity-start``.
        entity_pos: ``[B, 2]`` positions of the two opening markers (``entity-start`` only).

    Returns:
        ``[B, H]`` for ``cls``, ``[B, 2H]`` for ``entity-start`` (subject state, then object state).
    """
    if pooling == "cls":
        return hidden[:, 0]
    B, _, H = hidden.shape
    picked = hidden.gather(1, entity_pos.unsqueeze(2).expand(B, 2, H))  # [B, 2, H]
    return picked.reshape(B, 2 * H)


class BertForRelationClassification(BertPreTrainedModel):
    """BERT + relation pooling + linear classifier over ``config.num_labels`` relations.

    Extra config fields: ``relation_pooling`` (``cls`` or ``entity-start``),
    ``subject_start_ids`` and ``object_start_ids`` (lists of marker token ids).
    """

    def __init__(self, config) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.pooling = getattr(config, "relation_pooling", "cls")
        if self.pooling not in POOLINGS:
            raise ValueError(f"relation_pooling must be one of {POOLINGS}, got {self.pooling!r}")
        self.bert = BertModel(config, add_pooling_layer=False)
        drop = getattr(config, "classifier_dropout", None)
        self.dropout = nn.Dropout(config.hidden_dropout_prob if drop is None else drop)
        width = config.hidden_size * (2 if self.pooling == "entity-start" else 1)
        self.classifier = nn.Linear(width, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                entity_pos=None, **kwargs) -> SequenceClassifierOutput:
        """Args: ``[B, T]`` ids and mask; ``labels`` ``[B]``; ``entity_pos`` ``[B, 2]`` (optional:
        found from the marker ids in ``input_ids`` when absent).

        Returns:
            ``logits`` ``[B, C]`` and, with labels, ``loss`` (mean cross-entropy).
        """
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=token_type_ids).last_hidden_state
        if self.pooling == "entity-start" and entity_pos is None:
            # marker ids from the config, not a buffer: from_pretrained builds the model on the
            # meta device and does not restore non-persistent buffers
            ids = [torch.tensor(list(getattr(self.config, k, [])) or [-1], device=input_ids.device)
                   for k in ("subject_start_ids", "object_start_ids")]
            entity_pos = entity_start_positions(input_ids, *ids)
        logits = self.classifier(self.dropout(pool(hidden, self.pooling, entity_pos)))
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.float(), labels)
        return SequenceClassifierOutput(loss=loss, logits=logits)
