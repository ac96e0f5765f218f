"""The step's input shapes come from a small set, so a compiled or graph-captured step is
reused instead of rebuilt: over an epoch of BC5CDR fine-tuning (batch 32, packed, the CUDA
buckets: rows x8, widths x32) at most 10 distinct shapes, against 140 without buckets;
pretraining one shape per batch shape (an epoch's shorter last batch the only other)."""

import numpy as np
import pytest


def _shapes(batches, keys):
    return {tuple(tuple(b[k].shape) for k in keys if k in b) for b in batches}


@pytest.mark.integration
def test_an_epoch_of_bc5cdr_uses_at_most_10_shapes():
    from bertkit.encoders import default_model, load_tokenizer
    from bertkit.tasks.ner.data import load_ner_data
    from bertkit.tasks.ner.encoding import WindowBatches, encode

    train = load_ner_data("bc5cdr", ("train",)).splits["train"]
    tok = load_tokenizer(default_model())
    labels = sorted({t for s in train for t in s.tags})
    windows, _ = encode(train, tok, {lab: i for i, lab in enumerate(labels)}, 128)
    keys = ("input_ids", "word_pos", "pack_src")
    bucketed = WindowBatches(windows, 32, 1, tok.pad_token_id, length_group=1, pack=(64, 0, 8),
                             multiple=32)
    assert len(_shapes(bucketed.iter_batches(0), keys)) <= 10
    loose = WindowBatches(windows, 32, 1, tok.pad_token_id, length_group=1, pack=(64, 0, 1))
    assert len(_shapes(loose.iter_batches(0), keys)) > 50  # what the buckets save


def test_200_pretraining_steps_use_one_shape_per_batch_shape(tmp_path, tokenizer):
    from tests.tasks.pretrain.conftest import write_corpus
    from bertkit.masking import VocabInfo, build_masker
    from bertkit.tasks.pretrain.batches import PretrainBatches
    from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus

    stream = tokenize_corpus([write_corpus(tmp_path / "c.txt", lines=2000)], tokenizer,
                             tmp_path / "cache")
    seqs = PackedSequences(stream, 64, tokenizer.cls_token_id, tokenizer.sep_token_id)
    masker = build_masker("span", VocabInfo.from_tokenizer(tokenizer, stream.unigram))
    src = PretrainBatches(seqs, 8, masker, seed=1, sbo=True)
    batches, epoch = [], 0
    while len(batches) < 200:
        batches.extend(src.iter_batches(epoch))
        epoch += 1
    shapes = _shapes(batches[:200], ("input_ids", "mlm_positions", "sbo_boundaries"))
    full = ((8, 64), (8, 10), (8, 64, 2))
    assert full in shapes and len(shapes) <= 2, shapes
    assert len(seqs) % 8 or len(shapes) == 1  # the other shape only from a partial last batch
