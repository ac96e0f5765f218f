"""MLM pretraining (continued or from scratch) with token, whole-word or span masking + SBO.

Exports are imported on first use (PEP 562), so ``bertkit pretrain``'s options (declared on
:class:`PretrainConfig`) are read without loading the model code."""

import importlib

_EXPORTS = {"PretrainConfig": "config", "PretrainModel": "model",
            "build_pretrain_model": "model", "pretrain": "task"}
__all__ = list(_EXPORTS)


def __getattr__(attr: str):
    if attr not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[attr]}"), attr)
