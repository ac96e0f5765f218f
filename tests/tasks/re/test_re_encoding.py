import numpy as np
import pytest

from bertkit.data.relations import EntitySpan, RelationExample, parse_marked
from bertkit.tasks.re.encoding import MarkerSet, PairBatches, add_markers, collate, encode, fit_segments


@pytest.fixture
def tok(tokenizer):
    import copy

    return copy.deepcopy(tokenizer)


def example(marked, label="X"):
    text, e1, e2 = parse_marked(marked)
    return RelationExample(text, e1, e2, label)


def test_markers_are_single_special_tokens(tok):
    markers = MarkerSet(("CHEMICAL", "GENE-Y"))
    ids = add_markers(tok, markers)
    assert len(ids) == 12 and len(set(ids.values())) == 12
    assert min(ids.values()) >= 30522 and len(tok) == 30522 + 12  # new ids, vocabulary grown
    assert add_markers(tok, markers) == ids  # idempotent
    for m, i in ids.items():
        pieces = tok(f"x{m}y {m}", add_special_tokens=False)["input_ids"]
        assert pieces.count(i) == 2 and tok.unk_token_id not in pieces, m
        assert tok.convert_ids_to_tokens(i) == m  # not lower-cased by the uncased normaliser


def test_encode_layout_positions_and_text_order(tok):
    markers = MarkerSet()
    mid = add_markers(tok, markers)
    exs = [example("<< aspirin >> inhibits [[ cox ]] strongly"),
           example("[[ cox ]] is inhibited by << aspirin >>", "Y")]
    a, b = encode(exs, tok, mid, markers, {"X": 0}, 64)
    toks = tok.convert_ids_to_tokens(a.input_ids.tolist())
    assert toks[0] == "[CLS]" and toks[-1] == "[SEP]"
    assert toks[a.entity_pos[0]] == "[E1]" and toks[a.entity_pos[1]] == "[E2]"
    assert toks[a.entity_pos[0] + 1:a.entity_pos[0] + 3] == ["as", "##pi"]
    assert "[/E1]" in toks and toks.index("[/E2]") > a.entity_pos[1]
    tb = tok.convert_ids_to_tokens(b.input_ids.tolist())
    assert tb[b.entity_pos[0]] == "[E1]" and tb[b.entity_pos[1]] == "[E2]"
    assert b.entity_pos[1] < b.entity_pos[0]  # object first in the text
    assert (a.label, b.label) == (0, -100) and not a.truncated


def test_typed_markers_used_for_known_types(tok):
    markers = MarkerSet(("CHEMICAL",))
    mid = add_markers(tok, markers)
    ex = RelationExample("aspirin blocks cox", EntitySpan(0, 7, "CHEMICAL"), EntitySpan(15, 18, "GENE"), "X")
    (e,) = encode([ex], tok, mid, markers, {"X": 0}, 32)
    toks = tok.convert_ids_to_tokens(e.input_ids.tolist())
    assert toks[e.entity_pos[0]] == "[E1:CHEMICAL]" and "[/E1:CHEMICAL]" in toks
    assert toks[e.entity_pos[1]] == "[E2]"  # no typed marker for GENE: untyped


@pytest.mark.parametrize("lens,budget", [
    ([50, 3, 4, 2, 60], 20), ([0, 3, 100, 2, 0], 20), ([5, 40, 5, 40, 5], 20),
    ([5, 1, 5, 60, 5], 20), ([1, 2, 3, 4, 5], 100), ([30, 2, 2, 2, 0], 10)])
def test_fit_segments_keeps_both_entities_within_budget(lens, budget):
    kp, ka, (mh, mt), kb, kq = fit_segments(lens, budget)
    assert kp + ka + mh + mt + kb + kq == min(sum(lens), budget)
    assert ka >= 1 and kb >= 1
    assert kp <= lens[0] and ka <= lens[1] and mh + mt <= lens[2] and kb <= lens[3] and kq <= lens[4]
    if lens[1] + lens[3] <= budget:
        assert (ka, kb) == (lens[1], lens[3])  # whole entities whenever they fit


def test_truncation_around_far_apart_entities(tok):
    markers = MarkerSet()
    mid = add_markers(tok, markers)
    words = " ".join(["filler"] * 200)
    exs = [example(f"{words} << aspirin >> {words} [[ cox ]] {words}"),
           example(f"[[ cox ]] {words} {words} << aspirin >>")]
    for e in encode(exs, tok, mid, markers, {"X": 0}, 24):
        toks = tok.convert_ids_to_tokens(e.input_ids.tolist())
        assert len(toks) == 24 and e.truncated
        assert toks[e.entity_pos[0]] == "[E1]" and toks[e.entity_pos[1]] == "[E2]"
        for m in ("[/E1]", "[/E2]"):
            assert toks.count(m) == 1
        i = e.entity_pos[0]
        assert toks[i + 1:i + 4] == ["as", "##pi", "##rin"]


def test_collate_pads_to_longest_and_batches_group_lengths(tok):
    markers = MarkerSet()
    mid = add_markers(tok, markers)
    exs = [example("<< a >> [[ b ]]"), example("<< a >> c c c c c c [[ b ]] d d")]
    items = encode(exs, tok, mid, markers, {"X": 0}, 64)
    batch = collate(items, tok.pad_token_id)
    assert batch["input_ids"].shape == (2, len(items[1].input_ids))
    assert batch["attention_mask"].sum(1).tolist() == [len(items[0].input_ids), len(items[1].input_ids)]
    assert batch["entity_pos"].tolist() == [list(items[0].entity_pos), list(items[1].entity_pos)]
    lengths = np.array([5, 50, 6, 51, 7, 52, 8, 53])
    fake = [type(items[0])(np.zeros(n, dtype=np.int64), 0, np.array([1, 2]), False) for n in lengths]
    src = PairBatches(fake, 2, seed=0, pad_id=0)
    widths = [b["input_ids"].shape[1] for b in src.iter_batches(0)]
    assert sorted(widths) == [6, 8, 51, 53] and src.num_batches(0) == 4
    assert [b["input_ids"].shape[1] for b in src.iter_batches(0)] == widths  # deterministic
