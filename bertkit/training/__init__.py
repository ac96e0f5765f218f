"""The shared training core: one loop for every task. It imports no task.

A task hands :func:`bertkit.training.loop.train` a model whose ``forward(**batch)`` returns a dict
with ``"loss"``, a :class:`~bertkit.training.batches.BatchSource` and an evaluation function.
"""

from bertkit.training.batches import BatchSource, TrainResult
from bertkit.training.config import TrainConfig
from bertkit.training.loop import train

__all__ = ["TrainConfig", "BatchSource", "TrainResult", "train"]
