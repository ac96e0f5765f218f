"""The training core on a CUDA device: bf16 autocast chosen, fused AdamW chosen, SDPA attention
used, a masked-LM (+ SBO) step and an NER step in bf16 equal within bf16 tolerance to the same
step in fp32, and a checkpoint written on CUDA resumed on the CPU and back.

Every test is skipped where CUDA is not available. ``BERTKIT_CUDA_TEST_DEVICE=cpu`` runs them on
the CPU instead (bf16 autocast on the CPU): ``benchmarks/gpu_check.py --dry-run`` does so, so
that the tests' own code is checked before any GPU time is spent on them. The models are tiny
random BERTs (no tokenizer or packaged model needed: the GPU machine may have neither).
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from torch import nn

from bertkit.training import TrainConfig, train
from bertkit.training.checkpoint import list_checkpoints, load_checkpoint
from bertkit.training.devices import make_runtime
from bertkit.training.optim import build_optimizer

DEVICE = os.environ.get("BERTKIT_CUDA_TEST_DEVICE", "cuda")
ON_CUDA = DEVICE.startswith("cuda")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(ON_CUDA and not torch.cuda.is_available(), reason="needs a CUDA device"),
]

VOCAB = 512
LABELS = ["B-Chemical", "B-Disease", "I-Chemical", "I-Disease", "O"]


def _bert_config(**extra):
    from transformers import BertConfig

    # no dropout: the CPU and CUDA generators differ, and the steps are compared value by value
    return BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=128, max_position_embeddings=128, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0, **extra)


def _mlm_model():
    from transformers import BertForMaskedLM

    from bertkit.heads.sbo import SpanBoundaryHead
    from bertkit.tasks.pretrain.model import PretrainModel

    torch.manual_seed(0)
    mlm = BertForMaskedLM._from_config(_bert_config(), attn_implementation="sdpa")
    return PretrainModel(mlm, SpanBoundaryHead(64, VOCAB), sbo_weight=1.0)


def _ner_model(crf: bool):
    from transformers import BertForTokenClassification

    from bertkit.tasks.ner.model import TokenTagger

    torch.manual_seed(0)
    encoder = BertForTokenClassification._from_config(_bert_config(num_labels=len(LABELS)),
                                                      attn_implementation="sdpa")
    return TokenTagger(encoder, LABELS, crf=crf)


class Batches:
    """A fixed list of CPU batches (the loop moves them to the device)."""

    def __init__(self, batches):
        self.batches = batches

    def num_batches(self, epoch):
        return len(self.batches)

    def iter_batches(self, epoch, start=0):
        yield from self.batches[start:]


def _mlm_batches(n=3, B=4, T=32):
    """Packed rows with 15% of positions labelled and one two-token span per row for SBO."""
    g = torch.Generator().manual_seed(1)
    out = []
    for _ in range(n):
        ids = torch.randint(5, VOCAB, (B, T), generator=g)
        picked = torch.rand(B, T, generator=g) < 0.15
        picked[:, 0] = picked[:, -1] = False
        picked[:, 10:12] = True
        labels = torch.where(picked, ids, torch.full_like(ids, -100))
        masked = torch.where(picked, torch.full_like(ids, 4), ids)
        bounds = torch.full((B, T, 2), -1, dtype=torch.long)
        bounds[:, 10] = torch.tensor([9, 12])
        bounds[:, 11] = torch.tensor([9, 12])
        out.append({"input_ids": masked, "attention_mask": torch.ones_like(ids), "labels": labels,
                    "sbo_boundaries": bounds})
    return out


def _ner_batches(n=3, B=4, T=24):
    """Padded windows with word-level labels at every other piece (first pieces)."""
    g = torch.Generator().manual_seed(2)
    out = []
    for _ in range(n):
        lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
        lengths[0] = T
        mask = (torch.arange(T)[None] < lengths[:, None]).long()
        ids = torch.randint(5, VOCAB, (B, T), generator=g) * mask
        K = (T - 2) // 2
        word_pos = (1 + 2 * torch.arange(K))[None].expand(B, K).clone()
        word_mask = word_pos < (lengths[:, None] - 1)
        word_labels = torch.randint(0, len(LABELS), (B, K), generator=g)
        word_labels[:, 0] = LABELS.index("O")
        word_labels = torch.where(word_mask, word_labels, torch.zeros_like(word_labels))
        labels = torch.full((B, T), -100, dtype=torch.long)
        labels.scatter_(1, word_pos, torch.where(word_mask, word_labels, torch.full_like(word_labels, -100)))
        out.append({"input_ids": ids, "attention_mask": mask, "labels": labels,
                    "word_pos": word_pos, "word_mask": word_mask, "word_labels": word_labels})
    return out


def _train(model, batches, tmp_path, device, precision, steps, **cfg):
    config = TrainConfig(max_steps=steps, lr=1e-3, warmup=0, logging_steps=1, seed=0, **cfg)
    result = train(model, Batches(batches), config, make_runtime(device, precision), tmp_path)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if r.get("type") == "train"]
    return result, losses, {k: v.detach().float().cpu() for k, v in model.state_dict().items()}


def _update_cosine(before: dict, a: dict, b: dict) -> float:
    """Cosine similarity of two runs' whole-model weight updates (``a - before``, ``b - before``)."""
    da = torch.cat([(a[k] - before[k]).flatten() for k in before if before[k].is_floating_point()])
    db = torch.cat([(b[k] - before[k]).flatten() for k in before if before[k].is_floating_point()])
    return float(torch.nn.functional.cosine_similarity(da, db, dim=0))


def _mixed() -> str:
    """The mixed precision under test: ``auto`` on CUDA (which must pick bf16), bf16 on a CPU."""
    return "auto" if ON_CUDA else "bf16"


def test_auto_precision_is_bf16_autocast():
    runtime = make_runtime(DEVICE, _mixed())
    assert runtime.device.type == torch.device(DEVICE).type
    assert runtime.dtype is torch.bfloat16 and runtime.precision == "bf16"
    with runtime.autocast():
        y = nn.Linear(8, 8).to(runtime.device)(torch.ones(2, 8, device=runtime.device))
    assert y.dtype is torch.bfloat16
    assert make_runtime(DEVICE, "fp32").dtype is None
    if ON_CUDA:
        assert torch.backends.cuda.matmul.allow_tf32
        assert make_runtime(DEVICE, "fp16").dtype is torch.float16


def test_fused_adamw_on_cuda():
    model = _mlm_model().to(DEVICE)
    opt = build_optimizer(model, 1e-3, 0.01, torch.device(DEVICE))
    assert opt.defaults["fused"]  # on CUDA and on CPUs
    assert not build_optimizer(model, 1e-3, 0.01, torch.device(DEVICE), sharded=True).defaults["fused"]
    before = model.mlm.bert.embeddings.word_embeddings.weight.detach().clone()
    model(**{k: v.to(DEVICE) for k, v in _mlm_batches(1)[0].items()})["loss"].backward()
    opt.step()
    after = model.mlm.bert.embeddings.word_embeddings.weight.detach()
    assert torch.isfinite(after).all() and not torch.equal(before, after)


def test_sdpa_attention_is_used(monkeypatch):
    from bertkit.tasks.pretrain.model import build_pretrain_model

    class Tok:  # what scratch_config reads of a tokenizer
        pad_token_id = 0

        def __len__(self):
            return VOCAB

    model, _ = build_pretrain_model(None, "tiny", Tok(), sbo=True, sbo_weight=1.0)
    assert model.mlm.config._attn_implementation == "sdpa"
    calls = []
    real = torch.nn.functional.scaled_dot_product_attention

    def counted(*args, **kwargs):
        calls.append(args[0].dtype)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", counted)
    model.to(DEVICE)
    batch = {k: v.to(DEVICE) for k, v in _mlm_batches(1)[0].items()}
    runtime = make_runtime(DEVICE, _mixed())
    if ON_CUDA:  # the fused kernels, not the unfused math fallback
        from torch.nn.attention import SDPBackend, sdpa_kernel

        context = sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                               SDPBackend.CUDNN_ATTENTION])
    else:
        import contextlib

        context = contextlib.nullcontext()
    with context, runtime.autocast():
        loss = model(**batch)["loss"]
    loss.backward()
    assert len(calls) == 2 and set(calls) == {torch.bfloat16}  # one per layer, in bf16
    assert torch.isfinite(loss)


def test_mlm_step_bf16_matches_fp32(tmp_path):
    batches = _mlm_batches()
    before = {k: v.float() for k, v in _mlm_model().state_dict().items()}
    ref, ref_losses, ref_state = _train(_mlm_model(), batches, tmp_path / "fp32", "cpu", "fp32", 3)
    got, losses, state = _train(_mlm_model(), batches, tmp_path / "bf16", DEVICE, _mixed(), 3)
    assert got.steps == ref.steps == 3 and len(losses) == len(ref_losses) == 3
    assert all(abs(a - b) <= 0.02 * abs(b) for a, b in zip(losses, ref_losses)), (losses, ref_losses)
    assert losses[-1] < losses[0]  # it learns
    assert all(torch.isfinite(v).all() for v in state.values())
    assert _update_cosine(before, state, ref_state) > 0.95


@pytest.mark.parametrize("crf", [False, True], ids=["softmax", "crf"])
def test_ner_step_bf16_matches_fp32(tmp_path, crf):
    batches = _ner_batches()
    before = {k: v.float() for k, v in _ner_model(crf).state_dict().items()}
    ref, ref_losses, ref_state = _train(_ner_model(crf), batches, tmp_path / "fp32", "cpu", "fp32", 3)
    got, losses, state = _train(_ner_model(crf), batches, tmp_path / "bf16", DEVICE, _mixed(), 3)
    assert got.steps == 3 and len(losses) == 3
    assert all(abs(a - b) <= 0.02 * abs(b) + 1e-3 for a, b in zip(losses, ref_losses)), (losses, ref_losses)
    assert all(torch.isfinite(v).all() for v in state.values())
    assert _update_cosine(before, state, ref_state) > 0.95


def _keep_until(run, step: int) -> None:
    """Delete the run's checkpoints after ``step``, so that a resume starts from ``step_<step>``."""
    import shutil

    for path in list_checkpoints(run / "checkpoints"):
        if int(path.name.split("_")[1]) > step:
            shutil.rmtree(path)


def test_checkpoint_from_cuda_resumes_on_cpu_and_back(tmp_path):
    batches = _mlm_batches(n=3)  # 6 steps: two epochs
    run = tmp_path / "run"
    kw = dict(save_steps=1, save_total_limit=10)
    _, _, straight = _train(_mlm_model(), batches, tmp_path / "straight", DEVICE, _mixed(), 6)

    _train(_mlm_model(), batches, run, DEVICE, _mixed(), 6, **kw)
    _keep_until(run, 2)  # as if the device run had stopped after step 2
    saved = list_checkpoints(run / "checkpoints")[-1]
    cpu_model = _mlm_model()  # the device's checkpoint loads into a CPU model
    state = load_checkpoint(saved, cpu_model)
    assert all(p.device.type == "cpu" and torch.isfinite(p).all() for p in cpu_model.parameters())
    assert state["position"]["step"] == 2 and state["optimizer"]["state"]

    on_cpu, _, _ = _train(_mlm_model(), batches, run, "cpu", "fp32", 6, resume=True, **kw)
    assert on_cpu.steps == 6
    _keep_until(run, 4)  # steps 3 and 4 written on the CPU: back to the device from step 4
    back, _, final = _train(_mlm_model(), batches, run, DEVICE, _mixed(), 6, resume=True, **kw)
    assert back.steps == 6
    assert all(torch.isfinite(v).all() for v in final.values())
    before = {k: v.float() for k, v in _mlm_model().state_dict().items()}
    assert _update_cosine(before, final, straight) > 0.95


def test_cpu_checkpoint_resumes_with_fused_adamw_on_cuda():
    from bertkit.training.optim import load_optimizer_state

    batch = _mlm_batches(1)[0]
    cpu_model = _mlm_model()
    cpu_opt = build_optimizer(cpu_model, 1e-3, 0.01, torch.device("cpu"))
    cpu_model(**batch)["loss"].backward()
    cpu_opt.step()
    model = _mlm_model().to(DEVICE)
    opt = build_optimizer(model, 1e-3, 0.01, torch.device(DEVICE))
    load_optimizer_state(opt, cpu_opt.state_dict())
    assert all(g["fused"] for g in opt.param_groups)  # fused on CUDA and on CPUs
    model(**{k: v.to(DEVICE) for k, v in batch.items()})["loss"].backward()
    opt.step()
    state = opt.state[model.mlm.bert.embeddings.word_embeddings.weight]
    assert float(state["step"]) == 2.0 and torch.isfinite(state["exp_avg"]).all()
    if ON_CUDA:
        assert state["step"].device.type == "cuda"
