"""Sentence-pair similarity as a regression (BIOSSES, STS-style sets) over a plain
``AutoModelForSequenceClassification`` with one output and ``problem_type="regression"``."""

from bertkit.tasks import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, "SimConfig")
