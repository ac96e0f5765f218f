"""Extractive question answering: SQuAD 1.1/2.0-style data (SQuAD JSON or ``datasets`` JSON
lines), question + context windows, span decoding pooled over windows, the official SQuAD
scores, over a plain ``AutoModelForQuestionAnswering``."""

from bertkit.tasks import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, "QAConfig")
