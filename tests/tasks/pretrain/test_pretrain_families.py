"""Pretraining ModernBERT and DeBERTa-v2/v3 (issue 64): ``--config arch=...`` from scratch, the
vocabulary head found per family, each masking with SBO, resume, and the saved masked-LM loading
with plain ``transformers``."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForMaskedLM

from bertkit.errors import BertkitError
from bertkit.tasks.pretrain import PretrainConfig, pretrain
from bertkit.tasks.pretrain.batches import PretrainBatches
from bertkit.tasks.pretrain.model import build_pretrain_model, parse_size, scratch_config
from tests.encoder_families import make_tiny, tiny_deberta, tiny_modernbert  # noqa: F401
from tests.tasks.pretrain.conftest import Killed, die_after


def test_arch_key_builds_each_family(tokenizer):
    modern = scratch_config("arch=modernbert,layers=2,hidden=128", tokenizer)
    assert type(modern).__name__ == "ModernBertConfig"
    assert (modern.num_hidden_layers, modern.hidden_size, modern.num_attention_heads,
            modern.intermediate_size) == (2, 128, 2, 192)  # ModernBERT's 1.5 x hidden
    assert modern.max_position_embeddings == 8192 and modern.vocab_size == len(tokenizer)
    assert (modern.pad_token_id, modern.cls_token_id, modern.sep_token_id) == (
        tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id)
    deberta = scratch_config("layers=2, arch=deberta-v2 ,hidden=64,intermediate=100", tokenizer,
                             dropout=0.0)
    assert type(deberta).__name__ == "DebertaV2Config" and deberta.intermediate_size == 100
    assert deberta.relative_attention and deberta.position_biased_input is False
    assert deberta.hidden_dropout_prob == 0.0 and deberta.max_position_embeddings == 512
    assert type(scratch_config("arch=bert,tiny", tokenizer)).__name__ == "BertConfig"
    assert scratch_config("tiny", tokenizer).intermediate_size == 512  # BERT's 4 x, as before
    assert parse_size("arch=modernbert,layers=4,hidden=256") == parse_size("layers=4,hidden=256")


@pytest.mark.parametrize("spec, message", [
    ("arch=gpt2,layers=2,hidden=64", "unknown arch 'gpt2'"),
    ("arch=bert,arch=modernbert,layers=2,hidden=64", "'arch' given twice"),
    ("arch=modernbert", "no size beside arch=modernbert"),
    ("arch=modernbert,layers=2", "no hidden"),
])
def test_a_bad_arch_is_refused_before_loading(spec, message):
    with pytest.raises(BertkitError, match=message) as err:
        PretrainConfig(corpus="x.txt", config=spec, vocab="v").validate()
    if "unknown" in message:
        assert err.value.expected == "bert or modernbert or deberta-v2"


@pytest.mark.parametrize("legacy", [True, False])
def test_deberta_head_gives_the_models_own_logits_at_masked_positions(legacy, tmp_path, tokenizer):
    """Legacy (``cls``, how the released v3 checkpoints load) and new (``lm_predictions``, its
    decoder the embedding matrix passed at call time) DeBERTa heads."""
    path = make_tiny("deberta-v2", tmp_path / "d", tokenizer, legacy=legacy)
    _same_logits_as_the_masked_lm(path, tokenizer, "cls." if legacy else "lm_predictions.")


def test_modernbert_head_gives_the_models_own_logits_at_masked_positions(tiny_modernbert,
                                                                         tokenizer):
    _same_logits_as_the_masked_lm(tiny_modernbert, tokenizer, "head.")


def _same_logits_as_the_masked_lm(path, tokenizer, head_prefix):
    model, info = build_pretrain_model(path, None, tokenizer, sbo=True, sbo_weight=1.0)
    assert not info["new_mlm_head"]
    model.eval()
    ids = tokenizer(["the protein inhibitor reduced phosphorylation ."], return_tensors="pt")
    labels = torch.full_like(ids["input_ids"], -100)
    labels[0, [2, 4]] = ids["input_ids"][0, [2, 4]]
    with torch.no_grad():
        ours = model(ids["input_ids"], ids["attention_mask"], labels=labels)["mlm_logits"]
        full = model.mlm(**ids).logits[0, [2, 4]]
    assert ours.shape == (2, len(tokenizer)) and torch.allclose(ours, full, atol=1e-5)
    model.head_warmup_steps = 7
    frozen = {n: model.frozen_steps_for(n) for n, _ in model.named_parameters()}
    assert {n for n, k in frozen.items() if k == 0} == \
        {n for n in frozen if n.startswith(("sbo.", f"mlm.{head_prefix}", "mlm.decoder."))}
    assert any(k == 7 for k in frozen.values())  # the encoder waits


def test_a_plain_modernbert_encoder_gets_a_new_tied_head(tmp_path, tokenizer):
    path = make_tiny("modernbert", tmp_path / "enc", tokenizer, masked_lm=False)
    model, info = build_pretrain_model(path, None, tokenizer, sbo=False, sbo_weight=1.0)
    assert info["new_mlm_head"]
    assert model.mlm.decoder.weight.data_ptr() == model.mlm.get_input_embeddings().weight.data_ptr()


def _cfg(corpus, out, **kw):
    base = dict(corpus=str(corpus), valid=str(corpus), output_dir=str(out), max_steps=3,
                batch_size=4, max_seq_length=32, lr=1e-3, warmup=0.0, logging_steps=1,
                eval_steps=3, max_eval_sequences=4, device="cpu",
                cache_dir=str(out.parent / "cache"), save_steps=0)
    base.update(kw)
    return PretrainConfig(**base)


def _train(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
            if json.loads(line)["type"] == "train"]


@pytest.mark.parametrize("family", ["modernbert", "deberta-v2"])
@pytest.mark.parametrize("masking", ["token", "wwm", "span"])
def test_each_masking_pretrains_each_family_and_saves_a_plain_masked_lm(
        family, masking, corpus, tiny_modernbert, tiny_deberta, tmp_path, tokenizer):
    model = tiny_modernbert if family == "modernbert" else tiny_deberta
    run = tmp_path / "run"
    res = pretrain(_cfg(corpus, run, model=model, masking=masking))
    assert res["steps"] == 3 and res["sbo"] == (masking == "span")
    keys = {"loss", "mlm_loss", "sbo_loss"} if masking == "span" else {"loss", "mlm_loss"}
    assert set(res["train"]) == keys and all(0 < v < 30 for v in res["train"].values())
    saved = AutoModelForMaskedLM.from_pretrained(run / "model").eval()
    assert saved.config.model_type == family
    ours, _ = build_pretrain_model(str(run / "model"), None, tokenizer, sbo=masking == "span",
                                   sbo_weight=1.0)
    ids = tokenizer("the protein [MASK] inhibitor", return_tensors="pt")
    with torch.no_grad():
        assert torch.allclose(saved(**ids).logits, ours.eval().mlm(**ids).logits, atol=1e-5)
    card = (run / "model" / "README.md").read_text(encoding="utf-8")
    assert "Architecture: ModernBERT" in card if family == "modernbert" else \
        "Architecture: DeBERTa-v2/v3" in card


@pytest.mark.parametrize("arch", ["modernbert", "deberta-v2"])
def test_from_scratch_arch_pretrains_with_span_masking(arch, corpus, tiny_encoder, tmp_path):
    run = tmp_path / "run"
    res = pretrain(_cfg(corpus, run, config=f"arch={arch},layers=2,hidden=32,heads=2",
                        vocab=tiny_encoder, masking="span"))
    assert set(res["train"]) == {"loss", "mlm_loss", "sbo_loss"} and res["new_mlm_head"]
    assert res["architecture"] == arch
    assert json.loads((run / "model" / "bertkit.json").read_text())["architecture"] == arch
    config = json.loads((run / "model" / "config.json").read_text())
    assert config["model_type"] == arch and config["num_hidden_layers"] == 2


@pytest.mark.parametrize("family", ["modernbert", "deberta-v2"])
def test_resume_gives_the_same_loss_sequence(family, corpus, tiny_modernbert, tiny_deberta,
                                             tmp_path, monkeypatch):
    model = tiny_modernbert if family == "modernbert" else tiny_deberta
    pretrain(_cfg(corpus, tmp_path / "full", model=model, max_steps=5, save_steps=2))
    undo = die_after(monkeypatch, PretrainBatches, 3)  # after the checkpoint at step 2
    with pytest.raises(Killed):
        pretrain(_cfg(corpus, tmp_path / "cut", model=model, max_steps=5, save_steps=2))
    undo()
    pretrain(_cfg(corpus, tmp_path / "cut", model=model, max_steps=5, save_steps=2, resume=True))
    a, b = _train(tmp_path / "full"), _train(tmp_path / "cut")
    assert [r["step"] for r in b] == list(range(1, 6))
    for key in ("loss", "mlm_loss", "sbo_loss"):
        assert [r[key] for r in a] == [r[key] for r in b]


def test_nsp_needs_bert(tokenizer):
    with pytest.raises(BertkitError, match="--nsp needs BERT's next-sentence head"):
        build_pretrain_model(None, "arch=modernbert,layers=1,hidden=32", tokenizer, sbo=False,
                             sbo_weight=1.0, nsp=True)


def test_dropout_reaches_every_modernbert_dropout(tiny_modernbert, tokenizer):
    """ModernBERT is built without dropout (its attention's output dropout is then an
    Identity): ``--dropout`` sets the config's three rates and every dropout module."""
    from torch import nn

    model, _ = build_pretrain_model(tiny_modernbert, None, tokenizer, sbo=False, sbo_weight=1.0,
                                    dropout=0.1)
    config = model.mlm.config
    assert (config.attention_dropout, config.embedding_dropout, config.mlp_dropout) == (0.1,) * 3
    attention = [m for m in model.mlm.modules() if type(m).__name__ == "ModernBertAttention"]
    assert len(attention) == 3
    assert all(m.attention_dropout == 0.1 and isinstance(m.out_drop, nn.Dropout) and
               m.out_drop.p == 0.1 for m in attention)
    assert all(m.p == 0.1 for m in model.mlm.modules() if isinstance(m, nn.Dropout))
