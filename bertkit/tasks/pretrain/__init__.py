"""MLM pretraining (continued or from scratch) with token, whole-word or span masking + SBO."""

from bertkit.tasks.pretrain.config import PretrainConfig
from bertkit.tasks.pretrain.model import PretrainModel, build_pretrain_model
from bertkit.tasks.pretrain.task import pretrain

__all__ = ["PretrainConfig", "PretrainModel", "build_pretrain_model", "pretrain"]
