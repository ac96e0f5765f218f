"""Padding masks handed to BERT-family encoders in the form that needs no host read.

Given a ``[B, T]`` padding mask, transformers' BERT (and RoBERTa, ELECTRA) builds its attention
mask in ``masking_utils.create_bidirectional_mask``, which first asks ``padding_mask.all()``
(a host read: a sync on a GPU every forward pass) to drop an all-ones mask. A 4D mask is taken
as it is. :func:`broadcast_padding_masks` therefore turns the 2D mask into ``[B, 1, 1, T]``
before the encoder sees it (its ``forward`` wrapped): boolean for SDPA (True =
attend), additive (0 / dtype minimum) for eager attention, the same attention either way
(``scaled_dot_product_attention`` broadcasts the key mask over heads and queries). Full rows,
as pretraining batches are, carry no mask at all (``attention_mask=None``), which keeps SDPA
free to pick its flash kernel.
"""

from __future__ import annotations

import torch
from torch import nn

# encoders whose attention takes a [B, 1, 1, T] mask as it is (transformers' BERT family)
FAMILIES = ("bert", "roberta", "electra", "xlm-roberta", "camembert")


def _to_4d(module: nn.Module, mask):
    """``[B, T]`` padding mask -> ``[B, 1, 1, T]`` in the form ``module``'s attention takes."""
    keep = mask[:, None, None, :].bool()  # [B, 1, 1, T]
    if getattr(module.config, "_attn_implementation", "sdpa") != "eager":
        return keep
    dtype = module.get_input_embeddings().weight.dtype
    if torch.is_autocast_enabled(mask.device.type):
        dtype = torch.get_autocast_dtype(mask.device.type)
    return torch.zeros(keep.shape, dtype=dtype, device=mask.device).masked_fill(
        ~keep, torch.finfo(dtype).min)


class _Wrapped:
    """The encoder's ``forward`` replaced by one that turns a 2D ``attention_mask`` into
    :func:`_to_4d`'s form; ``remove()`` restores it. Wrapping ``forward`` itself, not a
    forward pre-hook, also catches callers that call ``encoder.forward(...)`` directly
    (sentence-transformers' ``Transformer`` module does)."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        original = module.forward

        def forward(*args, **kwargs):
            mask = kwargs.get("attention_mask")
            if torch.is_tensor(mask) and mask.ndim == 2:
                kwargs["attention_mask"] = _to_4d(module, mask)
            return original(*args, **kwargs)

        module.forward = forward

    def remove(self) -> None:
        self.module.__dict__.pop("forward", None)


def broadcast_padding_masks(model: nn.Module) -> list:
    """Wrap the ``forward`` of every BERT-family encoder inside ``model`` (see :class:`_Wrapped`).

    Returns:
        handles whose ``remove()`` undoes it; empty where ``model`` holds no such encoder
        (other families keep their own mask handling: ModernBERT unpads with the 2D mask,
        DeBERTa builds relative attention from it).
    """
    handles = []
    for module in model.modules():
        config = getattr(module, "config", None)
        if (config is not None and getattr(config, "model_type", None) in FAMILIES
                and hasattr(module, "get_input_embeddings")
                and module is getattr(module, "base_model", None)
                and "forward" not in module.__dict__):
            handles.append(_Wrapped(module))
    return handles
