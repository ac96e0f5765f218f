"""Dependency parsing: a Dozat & Manning (2017) biaffine parser over a BERT encoder."""

from bertkit.tasks import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, "DepConfig")
