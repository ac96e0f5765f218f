"""Relation extraction: classify the relation between two marked entities over a BERT encoder."""

from bertkit.tasks.re.config import REConfig
from bertkit.tasks.re.task import evaluate_re, finetune_re, predict_re

__all__ = ["REConfig", "finetune_re", "evaluate_re", "predict_re"]
