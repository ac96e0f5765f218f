"""Named-entity recognition: IOB2 token classification over a BERT encoder, optional CRF."""

from bertkit.tasks.ner.config import NERConfig
from bertkit.tasks.ner.task import evaluate_ner, finetune_ner, predict_ner

__all__ = ["NERConfig", "finetune_ner", "evaluate_ner", "predict_ner"]
