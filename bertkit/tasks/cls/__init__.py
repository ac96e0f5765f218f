"""Sentence (and sentence-pair) classification: SciCite, ACL-ARC, Paper Field and any JSON-lines,
CSV or TSV set, over a plain ``AutoModelForSequenceClassification``."""

from bertkit.tasks import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, "CLSConfig")
