"""Word boundaries come from the tokenizer itself (issue 17 item 4), not from an assumed ``##``."""

import pytest
import torch

from bertkit.errors import BertkitError
from bertkit.masking import VocabInfo, build_masker, word_boundary_rule, word_starts

TEXT = ("Cisplatin-induced nephrotoxicity was attenuated by pretreatment with "
        "N-acetylcysteine in Sprague-Dawley rats; immunohistochemistry showed "
        "hyperphosphorylation of the glucocorticoid receptor.")


def _renamed(tokenizer, prefix):
    """The same WordPiece vocabulary (same ids) with continuation prefix ``prefix``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {(prefix + p[2:] if p.startswith("##") else p): i
             for p, i in tokenizer.get_vocab().items()}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]",
                                     continuing_subword_prefix=prefix))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix=prefix)
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


@pytest.fixture(scope="module")
def pair(tokenizer):
    other = _renamed(tokenizer, "~~")
    a = tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    b = other(TEXT, add_special_tokens=False)["input_ids"]
    assert a == b  # the same pieces, ids and words; only the prefix string differs
    row = [tokenizer.cls_token_id] + a + [tokenizer.sep_token_id]
    ids = torch.tensor([row] * 6)
    return tokenizer, other, ids


def test_the_prefix_is_read_from_the_tokenizer(pair):
    ref, other, ids = pair
    assert word_boundary_rule(ref) == ("continuation", "##")
    assert word_boundary_rule(other) == ("continuation", "~~")
    v_ref, v_other = VocabInfo.from_tokenizer(ref), VocabInfo.from_tokenizer(other)
    assert torch.equal(v_ref.continues_word, v_other.continues_word)
    assert int(v_other.continues_word.sum()) > 5000  # the continuation pieces were found
    starts = word_starts(ids, v_other)
    words = other.convert_ids_to_tokens(ids[0].tolist())
    assert [w for w, s in zip(words, starts[0].tolist()) if not s and w[0] != "["] == \
        [w for w in words if w.startswith("~~")]


@pytest.mark.parametrize("name", ["token", "wwm", "span"])
def test_every_strategy_gives_the_same_masks_whatever_the_prefix(pair, name):
    ref, other, ids = pair
    masks = []
    for tok in (ref, other):
        masker = build_masker(name, VocabInfo.from_tokenizer(tok, torch.ones(len(tok))))
        masks.append(masker(ids, torch.Generator().manual_seed(4)))
    assert torch.equal(masks[0].input_ids, masks[1].input_ids)
    assert torch.equal(masks[0].labels, masks[1].labels)
    if name == "span":
        assert torch.equal(masks[0].sbo_boundaries, masks[1].sbo_boundaries)


def test_start_marker_and_word_level_rules():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[MASK]": 1, "[UNK]": 2, "\u2581pro": 3, "tein": 4, "\u2581a": 5}
    uni = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix=""))
    uni.pre_tokenizer = pre_tokenizers.Metaspace()
    sp = PreTrainedTokenizerFast(tokenizer_object=uni, mask_token="[MASK]", pad_token="[PAD]",
                                 unk_token="[UNK]")
    assert word_boundary_rule(sp) == ("start", "\u2581")
    info = VocabInfo.from_tokenizer(sp)
    assert info.continues_word.tolist()[:6] == [False, False, False, False, True, False]
    wl = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    assert word_boundary_rule(PreTrainedTokenizerFast(tokenizer_object=wl)) == ("none", "")


def test_a_tokenizer_without_a_backend_is_refused():
    class Slow:
        mask_token_id = 1

    with pytest.raises(BertkitError, match="word boundaries"):
        word_boundary_rule(Slow())


def test_vocab_extend_reads_word_initial_pieces_from_the_domain_tokenizer(pair, monkeypatch):
    """`vocab extend --vocab V` takes V's word-initial pieces by V's own prefix: the same words
    whether V marks continuations with ``##`` or ``~~`` (the same kind of bug as item 4)."""
    from bertkit.vocab import extend

    tokenizer, other, _ = pair
    got = {}
    for name, domain in (("hash", tokenizer), ("tilde", other)):
        monkeypatch.setattr(extend, "load_tokenizer", lambda vocab, d=domain: d)
        got[name] = extend._candidate_words(tokenizer, "domain", None, False)
    assert got["hash"] == got["tilde"]
    assert got["hash"] and not any(w.startswith(("##", "~~")) for w in got["tilde"])
