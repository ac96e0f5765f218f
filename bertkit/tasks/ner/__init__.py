"""Named-entity recognition: IOB2 token classification over a BERT encoder, optional CRF."""

import importlib

# exported lazily (PEP 562), so the light config module can be imported alone
# (the command line reads its choice lists) without the model code
_EXPORTS = {
    "NERConfig": "bertkit.tasks.ner.config",
    "finetune_ner": "bertkit.tasks.ner.task",
    "evaluate_ner": "bertkit.tasks.ner.task",
    "predict_ner": "bertkit.tasks.ner.task",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
