"""Tiny random encoders of the newer families (issue 64), with MiniLM's WordPiece tokenizer:
ModernBERT (3 layers: local attention in two of them, RoPE, 8,192 positions) and DeBERTa-v2/v3
(relative attention only, as DeBERTa-v3-base is configured). Import the fixtures into a test
module (``from tests.encoder_families import tiny_modernbert``)."""

from __future__ import annotations

from pathlib import Path

import pytest


def make_tiny(kind: str, path: Path, tokenizer, legacy: bool = True, masked_lm: bool = True) -> str:
    """Save a tiny random ``kind`` (``modernbert`` or ``deberta-v2``) masked-LM (or base model)
    and ``tokenizer`` in ``path``; returns the path."""
    import torch
    from transformers import (DebertaV2Config, DebertaV2ForMaskedLM, DebertaV2Model,
                              ModernBertConfig, ModernBertForMaskedLM, ModernBertModel)

    torch.manual_seed(0)
    ids = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
               hidden_size=32, num_attention_heads=2)
    if kind == "modernbert":
        config = ModernBertConfig(**ids, intermediate_size=48, num_hidden_layers=3,
                                  cls_token_id=tokenizer.cls_token_id,
                                  bos_token_id=tokenizer.cls_token_id,
                                  sep_token_id=tokenizer.sep_token_id,
                                  eos_token_id=tokenizer.sep_token_id,
                                  global_attn_every_n_layers=3, local_attention=16)
        cls = ModernBertForMaskedLM if masked_lm else ModernBertModel
    else:
        config = DebertaV2Config(**ids, intermediate_size=64, num_hidden_layers=2,
                                 max_position_embeddings=512, relative_attention=True,
                                 position_buckets=32, max_relative_positions=64,
                                 pos_att_type=["p2c", "c2p"], position_biased_input=False,
                                 norm_rel_ebd="layer_norm", type_vocab_size=0, legacy=legacy,
                                 hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        cls = DebertaV2ForMaskedLM if masked_lm else DebertaV2Model
    cls(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="session")
def tiny_modernbert(tmp_path_factory, tokenizer) -> str:
    return make_tiny("modernbert", tmp_path_factory.mktemp("tiny-modernbert"), tokenizer)


@pytest.fixture(scope="session")
def tiny_deberta(tmp_path_factory, tokenizer) -> str:
    return make_tiny("deberta-v2", tmp_path_factory.mktemp("tiny-deberta"), tokenizer)


@pytest.fixture(scope="session", params=["modernbert", "deberta-v2"])
def tiny_family(request, tmp_path_factory, tokenizer) -> str:
    """Each of the two families in turn."""
    return make_tiny(request.param, tmp_path_factory.mktemp(f"tiny-{request.param}"), tokenizer)
