"""Tasks: each turns its data into batches, builds a model and computes its metrics.

The training core (``bertkit.training``) imports no task; tasks compose over it.
"""


def lazy_exports(package: str, config: str):
    """``(__getattr__, __all__)`` for a task package ``bertkit.tasks.X``: ``config`` (the settings
    class) from ``X.config`` and ``finetune_X``, ``evaluate_X``, ``predict_X`` from ``X.task``,
    each imported on first use (PEP 562), so the light config module can be imported alone (the
    command line reads its choice lists) without the model code."""
    import importlib

    name = package.rsplit(".", 1)[-1]
    exports = {config: f"{package}.config",
               **{f"{verb}_{name}": f"{package}.task" for verb in ("finetune", "evaluate", "predict")}}

    def __getattr__(attr: str):
        if attr not in exports:
            raise AttributeError(f"module {package!r} has no attribute {attr!r}")
        return getattr(importlib.import_module(exports[attr]), attr)

    return __getattr__, list(exports)
