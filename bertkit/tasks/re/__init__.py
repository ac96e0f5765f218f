"""Relation extraction: classify the relation between two marked entities over a BERT encoder."""

from bertkit.tasks import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, "REConfig")
