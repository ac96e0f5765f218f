"""Dependency parsing: a Dozat & Manning (2017) biaffine parser over a BERT encoder."""

from bertkit.tasks.dep.task import DepConfig, evaluate_dep, finetune_dep, predict_dep

__all__ = ["DepConfig", "finetune_dep", "evaluate_dep", "predict_dep"]
