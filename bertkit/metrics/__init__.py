"""Scores of the field, computed by the field's libraries: entity F1 (ner, seqeval), relation
micro/macro-F1 (re, scikit-learn), UAS/LAS (dep)."""

from bertkit.metrics.ner import entity_scores

__all__ = ["entity_scores"]
