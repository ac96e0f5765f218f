import torch
from transformers import AutoModelForMaskedLM

from bertkit.masking import VocabInfo, build_masker
from bertkit.tasks.pretrain.model import SIZES, build_pretrain_model, scratch_config


def _batch(tokenizer, n=4, T=24, seed=0):
    vocab = VocabInfo.from_tokenizer(tokenizer)
    g = torch.Generator().manual_seed(seed)
    ids = vocab.normal_ids[torch.randint(2000, (n, T), generator=g)]
    ids[:, 0], ids[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    out = build_masker("span", vocab)(ids, g)
    return {"input_ids": out.input_ids, "attention_mask": torch.ones_like(ids),
            "labels": out.labels, "sbo_boundaries": out.sbo_boundaries}


def test_encoder_without_head_gets_a_tied_head_and_logits_only_at_masked_positions(tiny_encoder, tokenizer):
    model, info = build_pretrain_model(tiny_encoder, None, tokenizer, sbo=True, sbo_weight=0.5)
    assert info["new_mlm_head"]
    emb = model.mlm.get_input_embeddings().weight
    assert model.mlm.get_output_embeddings().weight.data_ptr() == emb.data_ptr()
    model.eval()
    batch = _batch(tokenizer)
    out = model(**batch)
    full = model.mlm(input_ids=batch["input_ids"]).logits
    picked = batch["labels"] != -100
    assert out["mlm_logits"].shape == (int(picked.sum()), len(tokenizer))
    assert torch.allclose(out["mlm_logits"], full[picked], atol=1e-5)
    ref = torch.nn.functional.cross_entropy(full[picked], batch["labels"][picked])
    assert torch.allclose(out["mlm_loss"], ref, atol=1e-5)
    assert torch.allclose(out["loss"], out["mlm_loss"] + 0.5 * out["sbo_loss"])
    assert 8 < float(out["sbo_loss"].detach()) < 13  # about ln(30522) = 10.3 for a random head


def test_sbo_loss_trains_the_head_and_the_encoder(tiny_encoder, tokenizer):
    model, _ = build_pretrain_model(tiny_encoder, None, tokenizer, sbo=True, sbo_weight=1.0)
    out = model(**_batch(tokenizer, seed=1))
    out["sbo_loss"].backward()
    assert model.sbo.dense1.weight.grad.abs().sum() > 0 and model.sbo.bias.grad.abs().sum() > 0
    assert model.mlm.get_input_embeddings().weight.grad.abs().sum() > 0


def test_sbo_head_predicts_at_most_15_targets_per_span_from_its_boundaries():
    from bertkit.heads.sbo import MAX_TARGETS, SpanBoundaryHead

    torch.manual_seed(0)
    head = SpanBoundaryHead(hidden_size=8, vocab_size=11, position_size=4)
    b = torch.full((2, 24, 2), -1)
    b[0, 1:21] = torch.tensor([0, 21])  # one span of 20 tokens, positions 1..20
    b[1, 5:7] = torch.tensor([4, 7])  # one of 2 tokens
    picked = head.targets(b)
    assert MAX_TARGETS == 15 and picked[0].sum() == 15 and picked[0, 1:16].all()
    assert picked[1].nonzero().squeeze(1).tolist() == [5, 6]
    hidden = torch.randn(2, 24, 8)
    weight = torch.randn(11, 8)
    logits, sel = head(hidden, b, weight)
    assert logits.shape == (17, 11) and torch.equal(sel, picked)
    # target 17 (row 1, position 6) is predicted from hidden[1, 4], hidden[1, 7], position 1
    h = torch.cat([hidden[1, 4], hidden[1, 7], head.position.weight[1]])
    h = head.norm2(torch.nn.functional.gelu(head.dense2(head.norm1(torch.nn.functional.gelu(
        head.dense1(h))))))
    assert torch.allclose(logits[16], weight @ h + head.bias, atol=1e-5)


def test_no_sbo_targets_means_no_sbo_loss(tiny_encoder, tokenizer):
    model, _ = build_pretrain_model(tiny_encoder, None, tokenizer, sbo=False, sbo_weight=1.0)
    batch = _batch(tokenizer)
    out = model(**batch)
    assert "sbo_loss" not in out and torch.equal(out["loss"], out["mlm_loss"])


def test_scratch_sizes_and_continuing_a_masked_lm_keeps_its_head(tmp_path, tokenizer):
    cfg = scratch_config("tiny", tokenizer)
    assert (cfg.num_hidden_layers, cfg.hidden_size) == (2, 128) and cfg.vocab_size == len(tokenizer)
    assert SIZES["base"]["hidden_size"] == 768 and SIZES["large"]["num_hidden_layers"] == 24
    model, info = build_pretrain_model(None, "tiny", tokenizer, sbo=True, sbo_weight=1.0)
    assert info["new_mlm_head"] and 4_000_000 < info["parameters"] < 5_000_000
    model.save(tmp_path / "m", tokenizer, {})
    again, info2 = build_pretrain_model(str(tmp_path / "m"), None, tokenizer, sbo=True, sbo_weight=1.0)
    assert not info2["new_mlm_head"] and info2["sbo_loaded"]
    assert torch.equal(again.sbo.dense2.weight, model.sbo.dense2.weight)
    reloaded = AutoModelForMaskedLM.from_pretrained(tmp_path / "m")
    assert torch.equal(reloaded.cls.predictions.bias, model.mlm.cls.predictions.bias)


def test_head_warmup_keeps_the_encoder_unchanged_then_lets_it_join(tiny_encoder, tokenizer):
    from bertkit.training.optim import build_optimizer, build_scheduler

    torch.manual_seed(0)
    model, _ = build_pretrain_model(tiny_encoder, None, tokenizer, sbo=True, sbo_weight=1.0)
    model.head_warmup_steps = 3
    opt = build_optimizer(model, 1e-3, 0.01, torch.device("cpu"))
    assert {g.get("frozen_steps", 0) for g in opt.param_groups} == {0, 3}
    sched = build_scheduler(opt, warmup=2, total_steps=10)
    encoder = {n: p.detach().clone() for n, p in model.named_parameters() if model.frozen_steps_for(n)}
    head = {n: p.detach().clone() for n, p in model.named_parameters() if not model.frozen_steps_for(n)}
    assert any("word_embeddings" in n for n in encoder)  # the tied decoder stays with the encoder
    assert any(n.startswith("mlm.cls.predictions.transform") for n in head) and any(
        n.startswith("sbo.") for n in head)

    def step(seed):
        out = model(**_batch(tokenizer, seed=seed))
        out["loss"].backward()
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)

    rates = []
    for k in range(3):
        rates.append([g["lr"] for g in opt.param_groups])
        step(k)
    params = dict(model.named_parameters())
    assert all(torch.equal(params[n], v) for n, v in encoder.items())  # frozen: exactly unchanged
    assert any(not torch.equal(params[n], v) for n, v in head.items())
    for k in range(3, 6):
        rates.append([g["lr"] for g in opt.param_groups])
        step(k)
    assert any(not torch.equal(params[n], v) for n, v in encoder.items())  # then it trains
    frozen = [i for i, g in enumerate(opt.param_groups) if g.get("frozen_steps")]
    free = [i for i, g in enumerate(opt.param_groups) if not g.get("frozen_steps")]
    # heads: warm-up over 2 steps then decay; encoder: 0 for 3 steps, then its own warm-up
    assert [round(rates[k][free[0]] / 1e-3, 4) for k in range(6)] == [0, 0.5, 1, 0.875, 0.75, 0.625]
    assert [round(rates[k][frozen[0]] / 1e-3, 4) for k in range(6)] == [0, 0, 0, 0, 0.5, 1]


def test_static_positions_give_the_same_losses_as_boolean_selection(tiny_encoder, tokenizer):
    """The training step's form (fixed-count positions, gathers only) equals the selection by
    labels: same MLM and SBO losses and gradients."""
    from bertkit.masking import mask_capacity, static_positions

    torch.manual_seed(0)
    model, _ = build_pretrain_model(tiny_encoder, None, tokenizer, sbo=True, sbo_weight=0.5)
    model.eval()  # no dropout: both forms see the same encoder outputs
    batch = _batch(tokenizer)
    ref = model(**batch)
    ref["loss"].backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    k = mask_capacity(batch["input_ids"].shape[1], 0.15)
    pos, tgt = static_positions(batch["labels"], k)
    out = model(input_ids=batch["input_ids"], mlm_positions=pos, mlm_labels=tgt,
                sbo_boundaries=batch["sbo_boundaries"])
    assert out["mlm_logits"].shape == (pos.numel(), len(tokenizer))
    for key in ("mlm_loss", "sbo_loss", "loss"):
        torch.testing.assert_close(out[key], ref[key], rtol=1e-5, atol=1e-6)
    assert int(out["loss_count"]) == int((batch["labels"] != -100).sum())
    out["loss"].backward()
    for n, p in model.named_parameters():
        if n in grads:
            torch.testing.assert_close(p.grad, grads[n], rtol=1e-4, atol=1e-6)
