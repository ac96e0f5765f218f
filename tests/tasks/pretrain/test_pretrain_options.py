"""Options for from-scratch recipes (issue 27, phase 1): custom sizes, dropout, a token budget,
registered corpus names, and validation curves against tokens seen."""

import json
import math

import pytest
import torch
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.sets import resolve_corpus
from bertkit.errors import BertkitError
from bertkit.tasks.pretrain import PretrainConfig, pretrain
from bertkit.tasks.pretrain.model import build_pretrain_model, parse_size, scratch_config


def test_custom_sizes_default_heads_and_intermediate_from_the_hidden_size(tokenizer):
    assert parse_size("layers=4,hidden=256") == {
        "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
        "intermediate_size": 1024}
    assert parse_size(" layers=3 , hidden=96, heads=3, intermediate=200") == {
        "num_hidden_layers": 3, "hidden_size": 96, "num_attention_heads": 3,
        "intermediate_size": 200}
    assert parse_size("layers=1,hidden=32")["num_attention_heads"] == 1  # never 0 heads
    assert parse_size("small") == {"num_hidden_layers": 4, "hidden_size": 512,
                                   "num_attention_heads": 8, "intermediate_size": 2048}
    cfg = scratch_config("layers=2,hidden=64", tokenizer, dropout=0.0)
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads,
            cfg.intermediate_size) == (2, 64, 1, 256)
    assert cfg.hidden_dropout_prob == 0.0 and cfg.attention_probs_dropout_prob == 0.0
    assert scratch_config("tiny", tokenizer).hidden_dropout_prob == 0.1  # BERT's default kept


@pytest.mark.parametrize("size, message", [
    ("medium", "unknown --config 'medium'"),
    ("layers=4,width=256", "unknown key 'width'"),
    ("layers=4,hidden=2x", "hidden='2x'"),
    ("layers=0,hidden=64", "layers='0'"),
    ("layers=4", "no hidden"),
    ("layers=4,hidden=100,heads=3", "not divisible by 3 heads"),
    ("layers=4,layers=2,hidden=64", "'layers' given twice"),
])
def test_bad_sizes_fail_before_anything_is_loaded(size, message, corpus):
    with pytest.raises(BertkitError, match=message):
        PretrainConfig(corpus=str(corpus), config=size, vocab="minilm").validate()


def test_dropout_zero_makes_training_mode_deterministic(tiny_encoder, tokenizer):
    ids = torch.randint(1000, 2000, (2, 16), generator=torch.Generator().manual_seed(0))
    labels = ids.clone()
    for model_path, size in ((None, "layers=2,hidden=64"), (tiny_encoder, None)):
        torch.manual_seed(0)
        model, _ = build_pretrain_model(model_path, size, tokenizer, sbo=False, sbo_weight=1.0,
                                        dropout=0.0)
        rates = [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)]
        assert rates and set(rates) == {0.0}
        assert model.mlm.config.attention_probs_dropout_prob == 0.0
        model.train()
        a, b = model(ids, labels=labels)["loss"], model(ids, labels=labels)["loss"]
        assert torch.equal(a, b)
        torch.manual_seed(0)
        noisy, _ = build_pretrain_model(model_path, size, tokenizer, sbo=False, sbo_weight=1.0,
                                        dropout=0.5)
        noisy.train()
        assert not torch.equal(noisy(ids, labels=labels)["loss"], noisy(ids, labels=labels)["loss"])


def test_token_budget_sets_the_steps_and_eval_records_carry_tokens_seen(corpus, tmp_path):
    cfg = PretrainConfig(corpus=str(corpus), max_tokens=1000, batch_size=4,
                         gradient_accumulation=2, max_seq_length=32)
    cfg.validate()
    assert cfg.max_steps == math.ceil(1000 / (4 * 2 * 32)) == 4
    with pytest.raises(BertkitError, match="--max-tokens"):
        PretrainConfig(corpus=str(corpus), max_tokens=0).validate()
    run = tmp_path / "run"
    res = pretrain(PretrainConfig(
        corpus=str(corpus), valid=str(corpus), config="layers=1,hidden=32", vocab="minilm",
        dropout=0.0, masking="token", max_tokens=600, batch_size=4, max_seq_length=32,
        eval_steps=2, max_eval_sequences=4, device="cpu", output_dir=str(run),
        cache_dir=str(tmp_path / "cache"), lr=1e-3))
    assert res["steps"] == 5 and res["train_tokens"] == 5 * 4 * 32 and res["max_tokens"] == 600
    evals = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
             if json.loads(line)["type"] == "eval"]
    assert [r["step"] for r in evals] == [2, 4, 5]
    assert [r["train_tokens"] for r in evals] == [256, 512, 640]
    assert all(r["train_seconds"] > 0 for r in evals)
    assert evals[0]["train_seconds"] < evals[-1]["train_seconds"]
    assert all(0 <= r["accuracy"] <= 1 and r["masked_tokens"] == evals[0]["masked_tokens"]
               for r in evals)  # the same fixed masks every time
    saved = json.loads((run / "model" / "config.json").read_text())
    assert saved["hidden_dropout_prob"] == 0.0 and saved["num_hidden_layers"] == 1


def _data_root(tmp_path, monkeypatch, corpus):
    root = tmp_path / "data"
    (root / "corpus").mkdir(parents=True)
    (root / "corpus" / "train.txt").write_text(corpus.read_text())
    (root / "corpus" / "valid.txt").write_text(corpus.read_text())
    monkeypatch.setenv("BERTKIT_DATA", str(root))
    return root


def test_registered_corpus_names_resolve_under_the_data_root(corpus, tmp_path, monkeypatch):
    root = _data_root(tmp_path, monkeypatch, corpus)
    assert resolve_corpus("scientific") == str(root / "corpus" / "train.txt")
    assert resolve_corpus("scientific, x.txt", "valid") == f"{root / 'corpus' / 'valid.txt'},x.txt"
    assert resolve_corpus(str(corpus)) == str(corpus)
    with pytest.raises(BertkitError, match="corpus 'general' is not available.*corpus-general"):
        resolve_corpus("general")
    monkeypatch.delenv("BERTKIT_DATA")
    with pytest.raises(BertkitError, match="BERTKIT_DATA is not set"):
        resolve_corpus("scientific")


def test_cli_names_the_corpora_and_trains_on_a_registered_one(corpus, tmp_path, monkeypatch):
    _data_root(tmp_path, monkeypatch, corpus)
    bad = CliRunner().invoke(app, ["pretrain", "-o", str(tmp_path / "none")])
    assert bad.exit_code == 1 and "no --corpus given" in bad.output
    assert "scientific" in bad.output and "general" in bad.output
    out = tmp_path / "cli"
    res = CliRunner().invoke(app, [
        "pretrain", "--corpus", "scientific", "--valid", "scientific", "--config",
        "layers=1,hidden=32", "--vocab", "minilm", "--dropout", "0", "--masking", "token",
        "--max-tokens", "200", "--batch-size", "2", "--max-seq-length", "32",
        "--max-eval-sequences", "2", "--device", "cpu", "--cache-dir", str(tmp_path / "cache"),
        "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "trained 4 steps, 256 tokens" in res.output
    results = json.loads((out / "results.json").read_text())
    assert results["corpus"].endswith("corpus/train.txt") and results["dropout"] == 0.0


@pytest.mark.parametrize("kind, expected", [
    ("linear", [0.0, 0.5, 1.0, 0.75, 0.5, 0.25, 0.0]),
    ("constant", [0.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0]),
    ("cosine", [0.0, 0.5, 1.0, 0.8536, 0.5, 0.1464, 0.0]),
])
def test_lr_schedules_after_a_linear_warm_up(kind, expected):
    from bertkit.training.config import TrainConfig
    from bertkit.training.optim import build_scheduler

    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = build_scheduler(opt, 2, 6, kind)
    rates = []
    for _ in range(7):
        rates.append(round(sched.get_last_lr()[0], 4))
        opt.step()
        sched.step()
    assert rates == expected
    with pytest.raises(BertkitError, match="--lr-schedule"):
        TrainConfig(lr_schedule="step").validate()


def test_valid_mask_prob_validates_at_its_own_rate(corpus, tmp_path):
    """Training at --mask-prob 0.3 with --valid-mask-prob 0.15 masks the validation set exactly
    as a 0.15 run does (the same fixed masks): about 15% of its 8 x 32 tokens, not 30%."""
    def masked(name, **kw):
        run = tmp_path / name
        pretrain(PretrainConfig(
            corpus=str(corpus), valid=str(corpus), config="layers=1,hidden=32", vocab="minilm",
            dropout=0.0, masking="token", max_steps=1, batch_size=2, max_seq_length=32,
            eval_steps=1, max_eval_sequences=8, device="cpu", output_dir=str(run),
            cache_dir=str(tmp_path / "cache"), save_steps=0, **kw))
        return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
                if json.loads(line)["type"] == "eval"][-1]["masked_tokens"]

    at_15 = masked("p15", mask_prob=0.15)
    assert 0.1 * 8 * 32 < at_15 < 0.2 * 8 * 32
    assert masked("p30-v15", mask_prob=0.3, valid_mask_prob=0.15) == at_15
    with pytest.raises(BertkitError, match="--valid-mask-prob is 1.0"):
        PretrainConfig(corpus=str(corpus), valid_mask_prob=1.0).validate()
