import numpy as np
import pytest
import torch
from transformers import AutoModelForTokenClassification, BertConfig

from bertkit.data.conll import Sentence
from bertkit.inputs.packing import Packer, plan_rows, position_start
from bertkit.tasks.ner.encoding import collate, encode
from bertkit.tasks.ner.model import build_tagger

LABELS = ["B-Chem", "I-Chem", "O"]


def test_plan_rows_first_fit_decreasing_no_overlap():
    lengths = np.array([30, 50, 10, 64, 20, 14])
    row, offset, n_rows = plan_rows(lengths, 64)
    assert n_rows == 3  # 64 | 50+14 | 30+20+10
    cells = np.zeros((n_rows, 64), dtype=int)
    for n, length in enumerate(lengths):
        cells[row[n], offset[n]:offset[n] + length] += 1
    assert cells.max() == 1 and cells.sum() == lengths.sum()
    with pytest.raises(ValueError, match="exceeds"):
        plan_rows(np.array([65]), 64)


def test_position_start_per_family():
    assert position_start(BertConfig()) == 0
    from transformers import RobertaConfig, DistilBertConfig

    assert position_start(RobertaConfig(pad_token_id=1)) == 2
    assert position_start(DistilBertConfig()) is None
    with pytest.raises(ValueError, match="not supported"):
        Packer(DistilBertConfig())


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_logits_equal_one_by_one(still_encoder, attn):
    torch.manual_seed(0)
    enc = AutoModelForTokenClassification.from_pretrained(still_encoder, num_labels=3,
                                                          attn_implementation=attn).eval()
    lengths = [5, 17, 9, 30, 3, 12]
    ids = torch.randint(1000, 2000, (len(lengths), max(lengths)))
    mask = (torch.arange(max(lengths))[None] < torch.tensor(lengths)[:, None]).long()
    ids = ids * mask
    packer = Packer(enc.config, capacity=32)
    inputs, _ = packer.pack(ids, mask)
    assert inputs["input_ids"].shape[0] < len(lengths)  # sentences really share rows
    with torch.no_grad():
        packed = packer.logits(enc, ids, mask)
        for n, length in enumerate(lengths):
            alone = enc(input_ids=ids[n:n + 1, :length]).logits[0]
            torch.testing.assert_close(packed[n, :length], alone, atol=1e-5, rtol=1e-4)
            assert packed[n, length:].abs().sum() == 0


def test_tagger_packed_loss_and_grads_match_padded(still_encoder, tokenizer):
    sents = [Sentence("Aspirin induced renal failure".split(), ["B-Chem", "O", "O", "O"]),
             Sentence("Cisplatin causes nephrotoxicity in rats .".split(),
                      ["B-Chem", "O", "O", "O", "O", "O"]),
             Sentence(["No"], ["O"])]
    l2i = {lab: i for i, lab in enumerate(LABELS)}
    windows, _ = encode(sents, tokenizer, l2i, 64)
    batch = collate(windows, tokenizer.pad_token_id)
    results = []
    for packed in (False, True):
        torch.manual_seed(0)
        tagger = build_tagger(still_encoder, LABELS, crf=False, label_all_subwords=False)
        if packed:
            tagger.packer = Packer(tagger.encoder.config, capacity=16)
        out = tagger(**batch)
        out["loss"].backward()
        results.append((out["loss"].item(), tagger.encoder.classifier.weight.grad.clone()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-5)
    torch.testing.assert_close(results[0][1], results[1][1], atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("rows", [1, 8])
def test_a_plan_made_where_the_batch_is_built_gives_the_same_logits(still_encoder, rows):
    """plan_batch (host, prefetch worker) + planned_logits (gathers only) equal packing in the
    step; rows rounded up to a bucket add all-padding rows and change nothing."""
    from bertkit.inputs.packing import plan_batch

    torch.manual_seed(0)
    enc = AutoModelForTokenClassification.from_pretrained(still_encoder, num_labels=3).eval()
    lengths = [5, 17, 9, 30, 3, 12]
    T = 32  # wider than the longest, as a bucketed batch is
    ids = torch.randint(1000, 2000, (len(lengths), T))
    mask = (torch.arange(T)[None] < torch.tensor(lengths)[:, None]).long()
    ids = ids * mask
    packer = Packer(enc.config, capacity=32)
    plan = plan_batch(np.asarray(lengths), T, 32, packer.start, rows)
    R, L = plan["pack_src"].shape
    assert L == 32 and R % rows == 0 and plan["unpack_index"].shape == (len(lengths), T)
    with torch.no_grad():
        torch.testing.assert_close(packer.planned_logits(enc, ids, **plan),
                                   packer.logits(enc, ids, mask), atol=1e-5, rtol=1e-4)
