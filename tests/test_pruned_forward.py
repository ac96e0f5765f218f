"""Last-layer pruning gives the full forward pass's logits at the chosen positions."""

import pytest
import torch
from transformers import (BertConfig, BertForTokenClassification, DistilBertConfig,
                          DistilBertForTokenClassification, RobertaConfig,
                          RobertaForTokenClassification)

from bertkit.predict.pruned_forward import logits_at, supports_pruning


def _batch(vocab: int, start: int = 0):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(start + 5, vocab, (3, 11), generator=g)
    mask = torch.ones(3, 11, dtype=torch.long)
    mask[1, 7:] = 0
    mask[2, 4:] = 0
    ids[mask == 0] = start  # padding
    pos = torch.tensor([[0, 2, 5, 10], [1, 3, 6, 0], [1, 2, 0, 0]])
    return ids, mask, pos


@pytest.mark.parametrize("cls,cfg,start", [
    (BertForTokenClassification, BertConfig, 0),
    (RobertaForTokenClassification, RobertaConfig, 1),
])
def test_logits_at_equal_full_forward(cls, cfg, start):
    torch.manual_seed(0)
    model = cls(cfg(vocab_size=50, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                    intermediate_size=64, num_labels=5, pad_token_id=start,
                    max_position_embeddings=40, attn_implementation="sdpa")).eval()
    assert supports_pruning(model)
    ids, mask, pos = _batch(50, start)
    with torch.inference_mode():
        full = model(input_ids=ids, attention_mask=mask).logits
        want = full.gather(1, pos.unsqueeze(2).expand(-1, -1, 5))
        got = logits_at(model, ids, mask, pos)
    assert got.shape == (3, 4, 5)
    assert torch.allclose(got, want, atol=1e-5)
    assert not torch.allclose(got[:, 1:], got[:, :-1])  # positions really differ


def test_unsupported_model_is_refused():
    model = DistilBertForTokenClassification(DistilBertConfig(
        vocab_size=50, dim=32, n_layers=1, n_heads=4, hidden_dim=64, num_labels=3))
    assert not supports_pruning(model)
    ids, mask, pos = _batch(50)
    with pytest.raises(ValueError, match="not a BERT-style"):
        logits_at(model, ids, mask, pos)
