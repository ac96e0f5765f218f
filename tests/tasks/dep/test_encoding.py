"""Windows for long sentences: every word gets exactly one vector slot; first vs mean pieces."""

import numpy as np

from bertkit.data.conllu import DepSentence
from bertkit.tasks.dep.encoding import SentenceBatches, collate, encode


def sentence(words):
    n = len(words)
    return DepSentence(list(words), ["_"] * n, np.r_[0, np.ones(n - 1, dtype=np.int64)],
                       ["root"] + ["dep"] * (n - 1))


def test_long_sentence_is_windowed_and_every_word_owned_once(tokenizer):
    words = ["interleukin"] * 30 + ["cells"] * 10      # interleukin = several pieces
    items, report = encode([sentence(words)], tokenizer, {"dep": 0, "root": 1}, max_length=16)
    it = items[0]
    assert report.windowed_sentences == 1 and len(it.windows) > 2
    assert all(len(w) <= 16 for w in it.windows)
    owned_first = np.concatenate([pw[f & (pw > 0)] for pw, f in zip(it.piece_word, it.first)])
    assert sorted(owned_first.tolist()) == list(range(1, 41))   # each word exactly once
    b = collate(items, tokenizer.pad_token_id)
    slots = b["piece_slot"][b["piece_slot"] >= 0]
    assert sorted(slots.tolist()) == list(range(0, 41))          # root + 40 words, once each
    assert b["rels"][0, 1:3].tolist() == [1, 0] and b["heads"][0, :3].tolist() == [0, 0, 1]


def test_mean_uses_every_piece_and_batches_are_deterministic(tokenizer):
    s = [sentence(["interleukin", "cells"]), sentence(["a", "b", "c"])]
    items, _ = encode(s, tokenizer, {"dep": 0, "root": 1}, max_length=64)
    n_pieces = len(tokenizer.tokenize("interleukin"))
    assert n_pieces > 1
    b = collate(items, tokenizer.pad_token_id, mean=True)
    slot = b["piece_slot"][0]
    assert int((slot == 1).sum()) == n_pieces and int((slot == 2).sum()) == 1
    first = collate(items, tokenizer.pad_token_id)
    assert int((first["piece_slot"][0] == 1).sum()) == 1
    assert first["mask"].tolist()[0] == [True, True, True, False]
    assert first["word_mask"].tolist()[1] == [False, True, True, True]
    src = SentenceBatches(items, 1, seed=3, pad_id=0)
    a = [x["input_ids"].tolist() for x in src.iter_batches(0)]
    assert a == [x["input_ids"].tolist() for x in src.iter_batches(0)]
    assert a[1:] == [x["input_ids"].tolist() for x in src.iter_batches(0, start=1)]
