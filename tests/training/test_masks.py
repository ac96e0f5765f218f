"""The 2D padding mask handed to BERT-family encoders as [B, 1, 1, T]: same outputs, no host read."""

import pytest
import torch
from transformers import AutoModelForSequenceClassification

from bertkit.training.host_sync import HostSyncCounter
from bertkit.training.masks import broadcast_padding_masks


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_broadcast_mask_gives_the_same_outputs_without_a_read(still_encoder, attn):
    model = AutoModelForSequenceClassification.from_pretrained(
        still_encoder, num_labels=3, attn_implementation=attn).eval()
    ids = torch.randint(1000, 2000, (3, 9))
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[0, 5:], mask[2, 2:] = 0, 0
    with torch.no_grad():
        ref = model(input_ids=ids, attention_mask=mask).logits
        handles = broadcast_padding_masks(model)
        assert len(handles) == 1  # the encoder inside the classifier, once
        with HostSyncCounter() as counter:
            out = model(input_ids=ids, attention_mask=mask).logits
        for h in handles:
            h.remove()
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    assert counter.total == 0, counter.counts
    with torch.no_grad(), HostSyncCounter() as counter:
        model(input_ids=ids, attention_mask=mask)
    if attn == "sdpa":  # without the hook transformers asks padding_mask.all()
        assert counter.counts["aten._local_scalar_dense.default"] >= 1
