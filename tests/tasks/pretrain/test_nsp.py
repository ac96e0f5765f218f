"""NSP pair construction (BERT's create_pretraining_data.py): labels, lengths, segments."""

from __future__ import annotations

import random

import numpy as np

from bertkit.tasks.pretrain.nsp import IS_NEXT, epoch_pairs, truncate_pair

CLS, SEP = 101, 102


def _documents(n_docs=40, seed=0):
    """Documents whose token ids encode (document, sentence): id = 1000*doc + 10*sent + k."""
    rng = np.random.default_rng(seed)
    docs = []
    for d in range(n_docs):
        sents = []
        for s in range(int(rng.integers(2, 12))):
            n = int(rng.integers(3, 9))
            sents.append(np.full(n, 1000 * (d + 1) + 10 * s, dtype=np.int64) + np.arange(n))
        docs.append(sents)
    return docs


def test_pairs_are_well_formed_and_half_random():
    docs = _documents()
    pairs = epoch_pairs(docs, max_seq_length=32, cls_id=CLS, sep_id=SEP, seed=1, epoch=0)
    assert len(pairs) > 100
    labels = np.asarray([p.next_sentence_label for p in pairs])
    assert 0.35 < labels.mean() < 0.75  # one-sentence chunks are always random-next
    for p in pairs:
        ids, types = p.input_ids, p.token_type_ids
        assert len(ids) <= 32 and ids[0] == CLS and ids[-1] == SEP
        seps = np.flatnonzero(ids == SEP)
        assert len(seps) == 2
        a, b = ids[1:seps[0]], ids[seps[0] + 1:-1]
        assert len(a) and len(b)
        assert (types[:seps[0] + 1] == 0).all() and (types[seps[0] + 1:] == 1).all()
        doc_a, doc_b = set(a // 1000), set(b // 1000)
        assert len(doc_a) == 1
        if p.next_sentence_label == IS_NEXT:
            assert doc_b == doc_a  # B continues A in the same document
            assert b.min() > a.max() or len(set(a) & set(b)) == 0
        else:
            assert doc_a.isdisjoint(doc_b)  # B from another document


def test_short_sequences_appear_with_short_seq_prob():
    docs = _documents(200)
    long_ = epoch_pairs(docs, 64, CLS, SEP, seed=3, epoch=0, short_seq_prob=0.0)
    mixed = epoch_pairs(docs, 64, CLS, SEP, seed=3, epoch=0, short_seq_prob=1.0)
    mean = lambda ps: np.mean([len(p.input_ids) for p in ps])  # noqa: E731
    assert mean(mixed) < mean(long_) - 5


def test_dynamic_and_reproducible():
    docs = _documents()
    a = epoch_pairs(docs, 32, CLS, SEP, seed=1, epoch=0)
    b = epoch_pairs(docs, 32, CLS, SEP, seed=1, epoch=0)
    c = epoch_pairs(docs, 32, CLS, SEP, seed=1, epoch=1)
    assert [p.input_ids.tolist() for p in a] == [p.input_ids.tolist() for p in b]
    assert [p.input_ids.tolist() for p in a] != [p.input_ids.tolist() for p in c]


def test_truncate_pair_trims_the_longer_segment():
    a, b = list(range(10)), list(range(100, 103))
    truncate_pair(a, b, 8, random.Random(0))
    assert len(a) + len(b) == 8 and b == [100, 101, 102] and len(a) == 5
