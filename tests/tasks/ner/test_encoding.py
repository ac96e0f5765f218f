import numpy as np

from bertkit.data.conll import Sentence
from bertkit.tasks.ner.encoding import (collate, encode, length_grouped_batches, owners,
                                        window_bounds)

LABELS = ["B-Chem", "I-Chem", "O"]
L2I = {l: i for i, l in enumerate(LABELS)}


def test_first_subword_alignment(tokenizer):
    s = Sentence(["nephrotoxicity", "of", "cisplatin"], ["O", "O", "B-Chem"])
    (w,), _ = encode([s], tokenizer, L2I, 64)
    pieces = tokenizer.convert_ids_to_tokens(w.input_ids.tolist())
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
    assert len(pieces) > 5  # nephrotoxicity is split into several pieces
    labelled = [(p, LABELS[l]) for p, l in zip(pieces, w.labels) if l != -100]
    assert labelled == [(pieces[1], "O"), ("of", "O"), (pieces[w.word_pos[2]], "B-Chem")]
    assert all(not p.startswith("##") for p, _ in labelled)
    assert w.word_index.tolist() == [0, 1, 2]


def test_label_all_subwords_continuation_is_inside(tokenizer):
    s = Sentence(["cisplatinum", "x"], ["B-Chem", "O"])
    (w,), _ = encode([s], tokenizer, L2I, 64, label_all_subwords=True)
    n_pieces = w.word_pos[1] - w.word_pos[0]
    assert n_pieces > 1
    tags = [LABELS[l] for l in w.labels[1:-1]]
    assert tags == ["B-Chem"] + ["I-Chem"] * (n_pieces - 1) + ["O"]


def test_window_bounds_cover_and_overlap():
    counts = np.array([1, 3, 2, 1, 1, 4, 1, 2, 1, 1])
    bounds = window_bounds(counts, 6)
    cum = np.concatenate([[0], np.cumsum(counts)])
    assert bounds[0][0] == 0 and bounds[-1][1] == len(counts)
    for (s, e), (s2, _) in zip(bounds, bounds[1:]):
        assert s < s2 <= e  # progress, and overlap or adjacency
    assert all(cum[e] - cum[s] <= 6 for s, e in bounds)
    own = owners(bounds, len(counts))
    assert (own >= 0).all()


def test_600_word_sentence_gets_600_predictions(tokenizer):
    words = [f"word{i % 7}" for i in range(600)]
    s = Sentence(words, ["O"] * 600)
    windows, report = encode([s], tokenizer, L2I, 128)
    assert len(windows) > 1 and report.windowed_sentences == 1
    owned = np.concatenate([w.word_index for w in windows])
    assert sorted(owned.tolist()) == list(range(600))
    assert all(len(w.input_ids) <= 128 for w in windows)


def test_words_without_pieces_still_predicted(tokenizer):
    s = Sentence(["a", "\u200b", "\u00ad", "b"], ["O"] * 4)
    (w,), report = encode([s], tokenizer, L2I, 64)
    assert report.empty_words == [(0, 1), (0, 2)]
    assert w.word_index.tolist() == [0, 1, 2, 3]
    assert tokenizer.convert_ids_to_tokens(w.input_ids[w.word_pos].tolist())[1:3] == ["[UNK]"] * 2


def test_collate_pads_only_to_batch_longest(tokenizer):
    sents = [Sentence(["a"] * n, ["O"] * n) for n in (3, 5)]
    windows, _ = encode(sents, tokenizer, L2I, 64)
    b = collate(windows, tokenizer.pad_token_id)
    assert b["input_ids"].shape == (2, 7) and b["word_pos"].shape == (2, 5)
    assert b["attention_mask"].sum().item() == 5 + 7
    assert b["labels"][0, 5:].eq(-100).all() and not b["word_mask"][0, 3:].any()


def test_length_grouped_batches_deterministic_and_complete():
    lengths = np.random.default_rng(0).integers(5, 100, size=1000)
    a = length_grouped_batches(lengths, 32, seed=3)
    assert [x.tolist() for x in a] == [x.tolist() for x in length_grouped_batches(lengths, 32, seed=3)]
    assert sorted(np.concatenate(a).tolist()) == list(range(1000))
    pad = sum(len(b) * lengths[b].max() - lengths[b].sum() for b in a)
    rng_batches = np.array_split(np.random.default_rng(0).permutation(1000), 32)
    pad_random = sum(len(b) * lengths[b].max() - lengths[b].sum() for b in rng_batches)
    assert pad < pad_random / 5
