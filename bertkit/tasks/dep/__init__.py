"""Dependency parsing: a Dozat & Manning (2017) biaffine parser over a BERT encoder."""

import importlib

# exported lazily (PEP 562), so the light config module can be imported alone
# (the command line reads its choice lists) without the model code
_EXPORTS = {
    "DepConfig": "bertkit.tasks.dep.config",
    "finetune_dep": "bertkit.tasks.dep.task",
    "evaluate_dep": "bertkit.tasks.dep.task",
    "predict_dep": "bertkit.tasks.dep.task",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
