"""The training step reads nothing back to the host: a GPU can run it without stalls and
capture it. Proven on the CPU by counting the operations that would sync a GPU
(:class:`bertkit.training.host_sync.HostSyncCounter`) during steady steps of pretraining and
fine-tuning, outside logging: 0 per step."""

import pytest

from bertkit.training import loop
from bertkit.training.host_sync import HostSyncCounter
from bertkit.training.state import Meter


@pytest.fixture
def audited(monkeypatch):
    """Arm a counter inside the step's parts only (forward/backward, the meter's add, the
    optimiser step); per optimiser step, the reads counted since the previous one."""
    counter = HostSyncCounter(armed=False)
    per_step: list[dict] = []
    seen = {"total": 0, "counts": {}}

    def wrap(fn, record=False):
        def wrapped(*args, **kwargs):
            with counter.armed():
                result = fn(*args, **kwargs)
            if record:
                now = dict(counter.counts)
                per_step.append({k: v - seen["counts"].get(k, 0) for k, v in now.items()
                                 if v - seen["counts"].get(k, 0)})
                seen["counts"] = now
            return result
        return wrapped

    monkeypatch.setattr(loop, "forward_backward", wrap(loop.forward_backward))
    monkeypatch.setattr(loop, "optimizer_step", wrap(loop.optimizer_step, record=True))
    monkeypatch.setattr(Meter, "add", wrap(Meter.add))
    with counter:
        yield per_step


def _steady(per_step, at_least=3):
    assert len(per_step) >= at_least + 1, per_step
    return per_step[1:]  # the first step may set things up (optimiser state, caches)


@pytest.mark.parametrize("masking", ["token", "span"])
def test_pretraining_steps_read_nothing_back(audited, masking, tiny_encoder, tmp_path):
    from tests.tasks.pretrain.conftest import write_corpus
    from bertkit.tasks.pretrain import PretrainConfig, pretrain

    corpus = write_corpus(tmp_path / "corpus.txt")
    pretrain(PretrainConfig(corpus=str(corpus), model=tiny_encoder, output_dir=str(tmp_path / "p"),
                            max_steps=6, batch_size=4, max_seq_length=32, lr=1e-3, warmup=0.0,
                            logging_steps=100, save_steps=0, device="cpu", masking=masking,
                            cache_dir=str(tmp_path / "cache"), precision="fp32"))
    assert _steady(audited) == [{}] * (len(audited) - 1)


@pytest.mark.parametrize("crf", [True, False])
def test_ner_steps_read_nothing_back(audited, crf, ner_dir, still_encoder, tmp_path):
    from bertkit.tasks.ner import NERConfig, finetune_ner

    finetune_ner(NERConfig(data=str(ner_dir), model=still_encoder, epochs=4, batch_size=2,
                           lr=1e-3, device="cpu", output_dir=str(tmp_path / "n"),
                           logging_steps=100, crf=crf, precision="fp32"))
    assert _steady(audited) == [{}] * (len(audited) - 1)


def test_relation_and_classification_steps_read_nothing_back(audited, tiny_encoder, tmp_path):
    from tests.tasks.cls.conftest import write_cls_dir
    from tests.tasks.re.conftest import write_re_dir
    from bertkit.tasks.cls.config import CLSConfig
    from bertkit.tasks.cls.task import finetune_cls
    from bertkit.tasks.re import REConfig, finetune_re

    finetune_re(REConfig(data=str(write_re_dir(tmp_path / "re")), model=tiny_encoder, epochs=2,
                         batch_size=2, lr=1e-3, device="cpu", output_dir=str(tmp_path / "r"),
                         logging_steps=100, precision="fp32"))
    steps_re = len(audited)
    assert _steady(audited) == [{}] * (steps_re - 1)
    finetune_cls(CLSConfig(data=str(write_cls_dir(tmp_path / "cls")), model=tiny_encoder,
                           epochs=2, batch_size=2, lr=1e-3, device="cpu",
                           output_dir=str(tmp_path / "c"), logging_steps=100, precision="fp32"))
    assert audited[steps_re + 1:] == [{}] * (len(audited) - steps_re - 1)


def test_the_counter_finds_what_syncs():
    """It cannot pass vacuously: each kind of read is counted, only in the armed thread."""
    import threading

    import torch

    x = torch.randn(4, 5)
    with HostSyncCounter() as counter:
        x.sum().item()
        _ = x[x > 0]
        (x > 0).nonzero()
        torch.tensor([1, 2])
        x.tolist()
        worker = threading.Thread(target=lambda: x.sum().item())  # the prefetch side may read
        worker.start()
        worker.join()
        with counter.paused():
            x.tolist()
    assert dict(counter.counts) == {"aten._local_scalar_dense.default": 1,
                                    "aten.index.Tensor (boolean mask)": 1,
                                    "aten.nonzero.default": 1, "aten.lift_fresh.default": 1,
                                    "Tensor.tolist": 1}


@pytest.mark.slow
@pytest.mark.parametrize("task", ["dep", "qa", "sim", "sim-bi-encoder"])
def test_parser_qa_and_similarity_steps_read_nothing_back(audited, task, tiny_encoder, tmp_path):
    """The other fine-tuning steps too (coreference's span ranking, whose candidate spans are
    data-dependent, is the one task whose step still reads back: see docs/developers.md)."""
    kw = dict(model=tiny_encoder, epochs=3, batch_size=2, device="cpu", precision="fp32",
              logging_steps=100, output_dir=str(tmp_path / "o"))
    if task == "dep":
        from tests.tasks.dep.conftest import write_dep_dir
        from bertkit.tasks.dep.config import DepConfig
        from bertkit.tasks.dep.task import finetune_dep
        finetune_dep(DepConfig(data=str(write_dep_dir(tmp_path / "d")), **kw))
    elif task == "qa":
        from tests.tasks.qa.conftest import write_qa_dir
        from bertkit.tasks.qa.config import QAConfig
        from bertkit.tasks.qa.task import finetune_qa
        finetune_qa(QAConfig(data=str(write_qa_dir(tmp_path / "d")), **kw))
    else:  # the bi-encoder calls the encoder's forward through sentence-transformers
        from tests.tasks.sim.conftest import write_sim_dir
        from bertkit.tasks.sim.config import SimConfig
        from bertkit.tasks.sim.task import finetune_sim
        arch = {"architecture": "bi-encoder"} if task == "sim-bi-encoder" else {}
        finetune_sim(SimConfig(data=str(write_sim_dir(tmp_path / "d")), **kw, **arch))
    assert _steady(audited, at_least=2) == [{}] * (len(audited) - 1)
