"""Step-based training: ``max_steps`` across epochs, evaluation every N steps, loss components."""

import json

import torch
from torch import nn

from bertkit.training import TrainConfig, train
from bertkit.training.devices import make_runtime


class TwoLosses(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Linear(4, 1)

    def forward(self, x, y):
        a = ((self.net(x).squeeze(-1) - y) ** 2).mean()
        b = self.net.weight.pow(2).sum()
        return {"loss": a + 0.5 * b, "fit_loss": a, "norm_loss": b, "logits": self.net(x)}


class Source:
    def __init__(self, n=3):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n * 4, 4, generator=g)
        self.y = self.x.sum(1)
        self.n = n

    def num_batches(self, epoch):
        return self.n

    def iter_batches(self, epoch, start=0):
        for b in range(start, self.n):
            yield {"x": self.x[4 * b:4 * b + 4], "y": self.y[4 * b:4 * b + 4]}


def _records(path):
    return [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]


def test_max_steps_spans_epochs_and_stops_mid_epoch(tmp_path):
    calls = []
    cfg = TrainConfig(max_steps=7, eval_steps=3, logging_steps=2, lr=1e-2, warmup=0)
    res = train(TwoLosses(), Source(3), cfg, make_runtime("cpu", "fp32"), tmp_path,
                evaluate=lambda m: calls.append(1) or {"score": 1.0}, select_metric=None)
    assert res.steps == 7 and len(calls) == 3  # steps 3, 6 and the last one, 7
    records = _records(tmp_path)
    assert [r["step"] for r in records if r["type"] == "eval"] == [3, 6, 7]
    train_recs = [r for r in records if r["type"] == "train"]
    assert all({"fit_loss", "norm_loss"} <= set(r) for r in train_recs)
    assert all(abs(r["loss"] - r["fit_loss"] - 0.5 * r["norm_loss"]) < 1e-5 for r in train_recs)
    assert "logits" not in train_recs[0]
    assert res.last_train["step"] == 7 and res.best_epoch is None
    assert (tmp_path / "checkpoints" / "step_7").is_dir()
    assert not (tmp_path / "checkpoints" / "best.pt").exists()


def test_max_steps_resume_of_a_finished_run_does_nothing(tmp_path):
    cfg = TrainConfig(max_steps=4, logging_steps=1, lr=1e-2, warmup=0)
    model = TwoLosses()
    train(model, Source(3), cfg, make_runtime("cpu", "fp32"), tmp_path)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    cfg.resume = True
    again = TwoLosses()
    res = train(again, Source(3), cfg, make_runtime("cpu", "fp32"), tmp_path)
    assert res.steps == 4
    assert all(torch.equal(before[k], v) for k, v in again.state_dict().items())
