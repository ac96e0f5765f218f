"""The training step's forward and loss trace as ONE graph (``torch._dynamo.explain``: no graph
breaks), so ``torch.compile(fullgraph=True)`` and CUDA graph capture can take the whole step.
The inputs are a real batch of each task's own training pipeline, caught at the step."""

import pytest
import torch

from bertkit.training import loop
from bertkit.training.masks import broadcast_padding_masks


@pytest.fixture
def caught(monkeypatch):
    """The model and the first batch each training run hands its step."""
    seen = []

    def catch(parts, batch, *args, **kwargs):
        if not seen or seen[-1][0] is not parts.model:
            seen.append((parts.model, {k: v.clone() for k, v in batch.items()}))
        return forward_backward(parts, batch, *args, **kwargs)

    forward_backward = loop.forward_backward
    monkeypatch.setattr(loop, "forward_backward", catch)
    return seen


def _breaks(model, batch) -> int:
    torch._dynamo.reset()
    model.train()
    hooks = broadcast_padding_masks(model)  # as the loop installs them
    try:
        explained = torch._dynamo.explain(model)(**batch)
    finally:
        for h in hooks:
            h.remove()
    assert explained.graph_count >= 1
    return explained.graph_break_count, [str(b.reason) for b in explained.break_reasons]


@pytest.mark.slow
def test_pretraining_forward_and_losses_are_one_graph(caught, tiny_encoder, tmp_path):
    from tests.tasks.pretrain.conftest import write_corpus
    from bertkit.tasks.pretrain import PretrainConfig, pretrain

    pretrain(PretrainConfig(corpus=str(write_corpus(tmp_path / "c.txt")), model=tiny_encoder,
                            output_dir=str(tmp_path / "p"), max_steps=1, batch_size=4,
                            max_seq_length=32, warmup=0.0, save_steps=0, device="cpu",
                            masking="span", cache_dir=str(tmp_path / "cache"), precision="fp32"))
    model, batch = caught[-1]
    assert {"mlm_positions", "sbo_boundaries"} <= set(batch)
    assert _breaks(model, batch) == (0, [])


@pytest.mark.slow
@pytest.mark.parametrize("crf", [True, False])
def test_ner_forward_and_loss_are_one_graph(caught, crf, ner_dir, still_encoder, tmp_path):
    from bertkit.tasks.ner import NERConfig, finetune_ner

    finetune_ner(NERConfig(data=str(ner_dir), model=still_encoder, epochs=1, batch_size=2,
                           device="cpu", output_dir=str(tmp_path / "n"), crf=crf,
                           precision="fp32"))
    model, batch = caught[-1]
    assert "pack_src" in batch  # the packed path, planned in the worker
    assert _breaks(model, batch) == (0, [])


@pytest.mark.slow
def test_relation_and_classification_forward_and_loss_are_one_graph(caught, tiny_encoder,
                                                                    tmp_path):
    from tests.tasks.cls.conftest import write_cls_dir
    from tests.tasks.re.conftest import write_re_dir
    from bertkit.tasks.cls.config import CLSConfig
    from bertkit.tasks.cls.task import finetune_cls
    from bertkit.tasks.re import REConfig, finetune_re

    finetune_re(REConfig(data=str(write_re_dir(tmp_path / "re")), model=tiny_encoder, epochs=1,
                         batch_size=2, device="cpu", output_dir=str(tmp_path / "r"),
                         precision="fp32"))
    finetune_cls(CLSConfig(data=str(write_cls_dir(tmp_path / "cls")), model=tiny_encoder,
                           epochs=1, batch_size=2, device="cpu", output_dir=str(tmp_path / "c"),
                           precision="fp32"))
    for model, batch in caught[-2:]:
        assert _breaks(model, batch) == (0, [])
