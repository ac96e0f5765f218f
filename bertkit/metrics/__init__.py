"""Scores of the field, computed by the field's libraries (seqeval, scikit-learn)."""

from bertkit.metrics.ner import entity_scores

__all__ = ["entity_scores"]
