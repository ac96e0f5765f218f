"""Encoder families (issue 64): SDPA where the architecture has it, the model's own attention
where it has not (DeBERTa-v2/v3), a decoder-only or other unsupported family refused by name, the
model card's architecture line, and how each family treats a packed row."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from bertkit.encoders import FAMILIES, attention_implementation, attention_note, encoder_family
from bertkit.errors import BertkitError
from tests.encoder_families import tiny_deberta, tiny_modernbert  # noqa: F401 (fixtures)


def _decoder_only(kind: str, path, tokenizer) -> str:
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    if kind == "gpt2":
        GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=16, n_layer=1,
                                   n_head=2)).save_pretrained(path)
    else:
        LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=16,
                                     intermediate_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=2)
                         ).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def test_sdpa_where_the_family_has_it_eager_for_deberta(tiny_encoder, tiny_modernbert,
                                                        tiny_deberta):
    assert attention_implementation(tiny_encoder) == "sdpa"
    assert attention_implementation(tiny_modernbert) == "sdpa"
    assert attention_implementation(tiny_deberta) == "eager"
    assert attention_note(tiny_encoder) is None and attention_note(tiny_modernbert) is None
    note = attention_note(tiny_deberta)
    assert note.startswith("DeBERTa-v2/v3 encoder: its own (eager) attention") and "SDPA" in note
    assert [encoder_family(p) for p in (tiny_encoder, tiny_modernbert, tiny_deberta)] == \
        ["BERT", "ModernBERT", "DeBERTa-v2/v3"]


def test_a_deberta_token_classifier_loads_with_its_own_attention(tiny_deberta):
    """It stopped with "does not support an attention implementation through
    torch.nn.functional.scaled_dot_product_attention" (bertkit asked every encoder for SDPA)."""
    from bertkit.tasks.ner.model import build_tagger

    tagger = build_tagger(tiny_deberta, ["O", "B-Chemical", "I-Chemical"], crf=False,
                          label_all_subwords=False)
    assert type(tagger.encoder).__name__ == "DebertaV2ForTokenClassification"
    assert tagger.encoder.config._attn_implementation == "eager"


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_a_decoder_only_model_is_refused_by_name(kind, tmp_path, tokenizer):
    path = _decoder_only(kind, tmp_path / kind, tokenizer)
    with pytest.raises(BertkitError) as err:
        attention_implementation(path)
    text = str(err.value)
    assert f"unsupported encoder family '{kind}'" in text and path in text
    for family in ("BERT", "RoBERTa", "ModernBERT", "DeBERTa-v2/v3"):
        assert family in text
    assert kind not in FAMILIES


@pytest.mark.parametrize("argv", [
    ["finetune", "ner", "--epochs", "1"],
    ["pretrain", "--max-steps", "1"],
])
def test_the_commands_refuse_a_decoder_only_model_with_exit_1(argv, tmp_path, tokenizer, ner_dir):
    """A GPT-2 folder fine-tuned for NER (GPT2ForTokenClassification exists) trained before:
    now it stops before anything is read or written."""
    from bertkit.cli import app

    model = _decoder_only("gpt2", tmp_path / "gpt2", tokenizer)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a sentence .\n" * 50, encoding="utf-8")
    data = ["--data", str(ner_dir)] if argv[0] == "finetune" else ["--corpus", str(corpus)]
    res = CliRunner().invoke(app, [*argv, *data, "--model", model, "--output-dir",
                                   str(tmp_path / "run"), "--device", "cpu"])
    assert res.exit_code == 1, res.output
    assert "unsupported encoder family 'gpt2'" in res.output and "ModernBERT" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "run").exists()


def test_the_card_line_reads_the_limit_from_the_config():
    from bertkit.outputs.modelcard import architecture_line

    bert = architecture_line({"model_type": "bert", "architectures": ["BertForMaskedLM"],
                              "num_hidden_layers": 2, "hidden_size": 32,
                              "num_attention_heads": 2, "max_position_embeddings": 512})
    assert bert.endswith("learned absolute positions, inputs up to 512 pieces.")
    modern = architecture_line({"model_type": "modernbert", "max_position_embeddings": 8192})
    assert modern == "Architecture: ModernBERT; rotary positions (RoPE), inputs up to 8,192 pieces."
    deberta = architecture_line({"model_type": "deberta-v2", "max_position_embeddings": 512,
                                 "position_biased_input": False})
    assert deberta == "Architecture: DeBERTa-v2/v3; relative positions, no fixed input limit."
    assert architecture_line({}) is None


def _packed(tokenizer, first: str, second: str):
    a, b = tokenizer(first)["input_ids"], tokenizer(second)["input_ids"]
    doc = torch.tensor([0] * len(a) + [1] * len(b))
    positions = torch.tensor([list(range(len(a))) + list(range(len(b)))])  # restart per document
    return a, b, torch.tensor([a + b]), positions, doc[:, None] == doc[None, :]


LONG = "aspirin inhibits platelets . aspirin inhibits platelets ."  # 18 pieces: > the local window


def test_modernbert_packs_documents_with_a_block_mask_per_layer_type(tiny_modernbert, tokenizer):
    """Document-bounded packing on ModernBERT: position ids restart at 0 per document (RoPE
    rotates by the position id) and each layer type gets its own block-diagonal mask, the local
    layers' ANDed with their window (|i - j| <= ``config.sliding_window``, half of
    ``local_attention``): each document's states are those it has alone. One 4D mask for both
    layer types (what a BERT packer passes) is taken as given by the local layers too, so they
    lose their window: exact only for documents within the window. Without a block mask (how
    ``pretrain`` packs, RoBERTa's FULL-SENTENCES) a document attends across the row."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_modernbert, attn_implementation="sdpa").eval()
    window = model.config.sliding_window
    assert window == 8 and "sliding_attention" in model.config.layer_types
    a, b, row, positions, block = _packed(tokenizer, LONG, "the kidney failed .")
    i = torch.arange(row.shape[1])
    local = block & ((i[:, None] - i[None, :]).abs() <= window)
    masks = {"full_attention": block[None, None], "sliding_attention": local[None, None]}
    with torch.no_grad():
        def states(ids, **kw):
            return model(input_ids=ids, **kw).last_hidden_state[0]

        alone_a, alone_b = states(torch.tensor([a])), states(torch.tensor([b]))
        packed = states(row, attention_mask=masks, position_ids=positions)
        one_mask = states(row, attention_mask=block[None, None], position_ids=positions)
        across = states(row)
    assert len(a) > window + 1
    assert torch.allclose(packed[:len(a)], alone_a, atol=1e-5)
    assert torch.allclose(packed[len(a):], alone_b, atol=1e-5)
    assert not torch.allclose(one_mask[:len(a)], alone_a, atol=1e-4)  # the long one: no window
    assert torch.allclose(one_mask[len(a):], alone_b, atol=1e-5)  # 6 pieces: inside the window
    assert not torch.allclose(across[len(a):], alone_b, atol=1e-3)


def test_deberta_attends_across_a_packed_row(tiny_deberta, tokenizer):
    """DeBERTa-v2/v3 cannot pack documents apart through ``transformers``: ``DebertaV2Model``
    multiplies its embeddings by the attention mask, so a [B, T, T] block mask does not fit, and
    its relative positions come from the row index. Packed rows (``pretrain``'s) attend across
    documents, as BERT's do; fine-tuning does not pack DeBERTa (:func:`bertkit.inputs.packing.position_start`)."""
    from transformers import AutoModel

    from bertkit.inputs.packing import position_start

    model = AutoModel.from_pretrained(tiny_deberta, attn_implementation="eager").eval()
    a, b, row, _, block = _packed(tokenizer, "aspirin inhibits platelets .", "kidney failed .")
    with torch.no_grad():
        alone_b = model(input_ids=torch.tensor([b])).last_hidden_state[0]
        across = model(input_ids=row).last_hidden_state[0]
        with pytest.raises(RuntimeError):
            model(input_ids=row, attention_mask=block[None].long())
    assert not torch.allclose(across[len(a):], alone_b, atol=1e-3)
    assert position_start(model.config) is None


def test_saved_config_of_modernbert_keeps_its_8192_positions(tiny_modernbert):
    from bertkit.inputs.lengths import model_position_limit

    config = json.loads((__import__("pathlib").Path(tiny_modernbert) / "config.json").read_text())
    assert config["max_position_embeddings"] == 8192
    assert model_position_limit(tiny_modernbert) == 8192
