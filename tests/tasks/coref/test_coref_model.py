"""The coreference model on a tiny random encoder: loss, gradients, decoding, encoding, crops."""

import numpy as np
import pytest
import torch

from bertkit.data.conll2012 import read_conll2012
from bertkit.tasks.coref.encoding import DocumentBatches, collate, encode_documents


@pytest.fixture
def docs(coref_dir):
    return read_conll2012(coref_dir / "train.conll")


def test_encoding_keeps_every_word_and_gold_span(docs, tokenizer):
    enc, counts = encode_documents(docs, tokenizer, 12)
    assert counts["long_words"] == 0
    for doc, e in zip(docs, enc):
        assert e.n_words == len(doc.words)
        owned = np.concatenate([p[p >= 0] for p in e.piece_word])
        assert set(owned.tolist()) == set(range(e.n_words))  # every word has pieces
        assert all(len(s) <= 12 for s in e.segments)
        assert sorted(map(tuple, e.spans.tolist())) == sorted(m for c in doc.clusters for m in c)
    batch = collate(enc[:2], tokenizer.pad_token_id)
    assert batch["n_words"].tolist() == [enc[0].n_words, enc[1].n_words]
    assert int(batch["piece_word"].max()) == enc[0].n_words + enc[1].n_words - 1
    # the second document's spans and clusters are offset past the first's
    assert int(batch["spans"][batch["span_doc"] == 1].min()) >= enc[0].n_words
    assert len(set(batch["clusters"][batch["span_doc"] == 0].tolist())
               & set(batch["clusters"][batch["span_doc"] == 1].tolist())) == 0


def test_crop_keeps_mentions_inside_and_batches_replay(docs, tokenizer):
    enc, _ = encode_documents(docs, tokenizer, 8)
    doc = enc[0]
    assert len(doc.segments) > 2
    crop = doc.crop(1, 2)
    lo, hi = doc.segment_words[1][0], doc.segment_words[2][1]
    assert crop.n_words == hi - lo
    inside = [(s - lo, e - lo) for s, e in doc.spans.tolist() if s >= lo and e < hi]
    assert sorted(map(tuple, crop.spans.tolist())) == sorted(inside)
    source = DocumentBatches(enc, 1, 7, tokenizer.pad_token_id, 2)
    first = [b["input_ids"] for b in source.iter_batches(3)]
    again = [b["input_ids"] for b in source.iter_batches(3, start=1)]
    assert all(torch.equal(a, b) for a, b in zip(first[1:], again))
    assert all(b.shape[0] <= 2 for b in first)


def test_it_overfits_three_documents_and_decodes_their_clusters(docs, tokenizer, tiny_encoder):
    # labels, gold matching, decoding and scoring agree: a tiny model fits its training
    # documents exactly (CoNLL F1 100), so a low real score is training, not plumbing
    from bertkit.metrics.coref import coref_scores
    from bertkit.tasks.coref.model import build_model

    torch.manual_seed(0)
    model = build_model(tiny_encoder, 32, 5, 0.0, 0.4)
    enc, _ = encode_documents(docs, tokenizer, 16)
    batch = collate(enc, tokenizer.pad_token_id)
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    losses = []
    for _ in range(60):
        out = model(**batch)
        assert torch.isfinite(out["loss"])
        out["loss"].backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(out["loss"].detach()))
    assert losses[-1] < losses[0] * 0.1
    model.eval()
    clusters = model.resolve(**batch)
    assert clusters == [d.clusters for d in docs]
    assert coref_scores([d.clusters for d in docs], clusters)["conll_f1"] == pytest.approx(100.0)


def test_document_without_gold_mentions_trains(tokenizer, tiny_encoder):
    from bertkit.data.conll2012 import CorefDocument
    from bertkit.tasks.coref.model import build_model

    torch.manual_seed(0)
    model = build_model(tiny_encoder, 8, 3, 0.0, 0.4)
    doc = CorefDocument("x", [["Nothing", "here", "."]], clusters=[])
    enc, _ = encode_documents([doc], tokenizer, 16)
    out = model(**collate(enc, tokenizer.pad_token_id))
    assert torch.isfinite(out["loss"])  # all candidates negative, every span's gold is the dummy
    out["loss"].backward()
