"""Padding masks handed to BERT-family encoders in the form that needs no host read.

Given a ``[B, T]`` padding mask, transformers' BERT (and RoBERTa, ELECTRA) builds its attention
mask in ``masking_utils.create_bidirectional_mask``, which first asks ``padding_mask.all()``
(a host read: a sync on a GPU every forward pass) to drop an all-ones mask. A 4D mask is taken
as it is. :func:`broadcast_padding_masks` therefore turns the 2D mask into ``[B, 1, 1, T]``
before the encoder sees it (a forward pre-hook on the encoder): boolean for SDPA (True =
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


def _to_4d(module: nn.Module, args: tuple, kwargs: dict):
    mask = kwargs.get("attention_mask")
    if not torch.is_tensor(mask) or mask.ndim != 2:
        return None
    keep = mask[:, None, None, :].bool()  # [B, 1, 1, T]
    if getattr(module.config, "_attn_implementation", "sdpa") != "eager":
        kwargs["attention_mask"] = keep
    else:
        dtype = module.get_input_embeddings().weight.dtype
        if torch.is_autocast_enabled(mask.device.type):
            dtype = torch.get_autocast_dtype(mask.device.type)
        kwargs["attention_mask"] = torch.zeros(keep.shape, dtype=dtype, device=mask.device
                                               ).masked_fill(~keep, torch.finfo(dtype).min)
    return args, kwargs


def broadcast_padding_masks(model: nn.Module) -> list:
    """Register :func:`_to_4d` on every BERT-family encoder inside ``model``.

    Returns:
        the hook handles (``handle.remove()`` undoes it); empty where ``model`` holds no such
        encoder (other families keep their own mask handling: ModernBERT unpads with the 2D
        mask, DeBERTa builds relative attention from it).
    """
    handles = []
    for module in model.modules():
        config = getattr(module, "config", None)
        if (config is not None and getattr(config, "model_type", None) in FAMILIES
                and hasattr(module, "get_input_embeddings")
                and module is getattr(module, "base_model", None)):
            handles.append(module.register_forward_pre_hook(_to_4d, with_kwargs=True))
    return handles
