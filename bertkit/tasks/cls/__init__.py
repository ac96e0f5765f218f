"""Sentence (and sentence-pair) classification: SciCite, ACL-ARC, Paper Field and any JSON-lines,
CSV or TSV set, over a plain ``AutoModelForSequenceClassification``."""

from bertkit.tasks.cls.config import CLSConfig
from bertkit.tasks.cls.task import evaluate_cls, finetune_cls, predict_cls

__all__ = ["CLSConfig", "finetune_cls", "evaluate_cls", "predict_cls"]
