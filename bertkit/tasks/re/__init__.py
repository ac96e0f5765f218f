"""Relation extraction: classify the relation between two marked entities over a BERT encoder."""

import importlib

# exported lazily (PEP 562), so the light config module can be imported alone
# (the command line reads its choice lists) without the model code
_EXPORTS = {
    "REConfig": "bertkit.tasks.re.config",
    "finetune_re": "bertkit.tasks.re.task",
    "evaluate_re": "bertkit.tasks.re.task",
    "predict_re": "bertkit.tasks.re.task",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
