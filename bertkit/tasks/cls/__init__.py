"""Sentence (and sentence-pair) classification: SciCite, ACL-ARC, Paper Field and any JSON-lines,
CSV or TSV set, over a plain ``AutoModelForSequenceClassification``."""

import importlib

# exported lazily (PEP 562), so the light config module can be imported alone
# (the command line reads its choice lists) without the model code
_EXPORTS = {
    "CLSConfig": "bertkit.tasks.cls.config",
    "finetune_cls": "bertkit.tasks.cls.task",
    "evaluate_cls": "bertkit.tasks.cls.task",
    "predict_cls": "bertkit.tasks.cls.task",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
