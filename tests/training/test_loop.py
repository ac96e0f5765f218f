import json

import pytest
import torch
from torch import nn

from bertkit.errors import BertkitError
from bertkit.training import TrainConfig, train
from bertkit.training.devices import make_runtime
from bertkit.training.optim import build_optimizer, build_scheduler, parameter_groups, warmup_steps


class Toy(nn.Module):
    """Regression with dropout, so that resuming must restore the RNG to match."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.3), nn.LayerNorm(16), nn.Linear(16, 1))

    def forward(self, x, y, attention_mask=None):
        return {"loss": ((self.net(x).squeeze(-1) - y) ** 2).mean()}


class Source:
    def __init__(self, n=10, crash_at=None):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n * 4, 4, generator=g)
        self.y = self.x.sum(1)
        self.n, self.crash_at, self.seen = n, crash_at, 0

    def num_batches(self, epoch):
        return self.n

    def iter_batches(self, epoch, start=0):
        order = torch.randperm(self.n, generator=torch.Generator().manual_seed(100 + epoch))
        for b in order[start:].tolist():
            if self.crash_at is not None and self.seen == self.crash_at:
                raise KeyboardInterrupt("simulated kill")
            self.seen += 1
            yield {"x": self.x[4 * b:4 * b + 4], "y": self.y[4 * b:4 * b + 4]}


def run(tmp_path, source, **kw):
    cfg = TrainConfig(**{"epochs": 3, "lr": 1e-2, "save_steps": 2, "logging_steps": 1,
                         "warmup": 0.2, **kw})
    model = Toy()
    res = train(model, source, cfg, make_runtime("cpu", "fp32"), tmp_path,
                evaluate=lambda m: {"f1": -float(m(source.x, source.y)["loss"])})
    return model, res


def test_resume_is_exact(tmp_path):
    full, res_full = run(tmp_path / "a", Source())
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b", Source(crash_at=15))  # mid-epoch 2, after the checkpoint at step 14
    resumed, res = run(tmp_path / "b", Source(), resume=True)
    for p, q in zip(full.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(p, q)
    assert res.steps == res_full.steps == 30
    assert res.best_epoch == res_full.best_epoch
    steps = [json.loads(l)["step"] for l in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
             if json.loads(l)["type"] == "train"]
    assert steps == list(range(1, 31))  # records after the checkpoint are redone, not doubled


def test_resume_says_where_it_continues(tmp_path):
    from rich.console import Console
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, Source(crash_at=15))  # the last checkpoint is step 14, in epoch 2
    console = Console(record=True, width=120)
    cfg = TrainConfig(epochs=3, lr=1e-2, save_steps=2, logging_steps=1, warmup=0.2, resume=True)
    train(Toy(), Source(), cfg, make_runtime("cpu", "fp32"), tmp_path, console=console,
          evaluate=lambda m: {"f1": 0.0})
    assert "resuming from checkpoint step 14 (epoch 2, 224 tokens trained)" in console.export_text()


def test_gradient_accumulation_counts_steps_and_keeps_last_checkpoints(tmp_path):
    _, res = run(tmp_path, Source(n=7), gradient_accumulation=3)
    assert res.steps == 3 * 3  # ceil(7 / 3) per epoch
    ckpts = sorted(p.name for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith("step_"))
    assert ckpts == ["step_8", "step_9"]


def test_resume_without_checkpoint_is_an_error(tmp_path):
    with pytest.raises(BertkitError, match="no checkpoint"):
        run(tmp_path, Source(), resume=True)


def test_non_finite_loss_stops_with_step(tmp_path):
    src = Source()
    src.y[:] = float("nan")
    with pytest.raises(BertkitError, match="non-finite training loss .* step 1, epoch 1, on "
                                           "batch 1 of epoch 1") as err:
        run(tmp_path, src)
    assert "a lower --lr, or --skip-nonfinite" in str(err.value)  # fp32 already: not suggested


class Described(Source):
    """Batch 3 of every epoch has a NaN target; the source names its lines."""

    def iter_batches(self, epoch, start=0):
        for i, batch in enumerate(super().iter_batches(epoch, start), start=start):
            if i == 3:
                batch = {"x": batch["x"], "y": batch["y"] * float("nan")}
            yield batch

    def describe(self, epoch, index):
        return f"train.tsv lines {10 * index + 1}-{10 * index + 10}"


def test_non_finite_batches_are_named_and_can_be_skipped(tmp_path):
    with pytest.raises(BertkitError, match="on train.tsv lines 31-40 .*--skip-nonfinite"):
        run(tmp_path / "a", Described())
    model, res = run(tmp_path / "b", Described(), skip_nonfinite=3)
    assert res.steps == 3 * 10  # a skipped batch's step is taken as a no-op on the device
    assert all(torch.isfinite(p).all() for p in model.parameters())  # the NaN never applied
    skips = [json.loads(line) for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
             if json.loads(line)["type"] == "skipped_batch"]
    assert [s["source"] for s in skips] == ["train.tsv lines 31-40"] * 3
    with pytest.raises(BertkitError, match="non-finite"):
        run(tmp_path / "c", Described(), skip_nonfinite=2)  # the third one is one too many


class Signalled(Source):
    """Sends this process SIGTERM (a scheduler's pre-emption) while yielding batch ``at``."""

    def __init__(self, at, **kw):
        super().__init__(**kw)
        self.at = at

    def iter_batches(self, epoch, start=0):
        import os
        import signal

        for batch in super().iter_batches(epoch, start):
            if self.seen == self.at:
                os.kill(os.getpid(), signal.SIGTERM)
            yield batch


def test_sigterm_saves_a_checkpoint_and_resume_matches_an_uninterrupted_run(tmp_path):
    model_full, res_full = run(tmp_path / "full", Source())
    with pytest.raises(BertkitError, match="stopped by SIGTERM at step 13") as err:
        run(tmp_path / "cut", Signalled(13), save_steps=0)
    assert err.value.exit_code == 143
    assert (tmp_path / "cut" / "checkpoints" / "step_13").is_dir()
    model_res, res = run(tmp_path / "cut", Source(), save_steps=0, resume=True)
    assert res.steps == res_full.steps == 30
    for a, b in zip(model_full.state_dict().values(), model_res.state_dict().values()):
        assert torch.equal(a, b)


def test_run_records_environment_curves_and_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    run(tmp_path, Source(), report_to="tensorboard")
    env = json.loads((tmp_path / "environment.json").read_text())
    assert env["seed"] == 42 and env["packages"]["torch"] == torch.__version__
    assert env["device"] == "cpu" and env["world_size"] == 1
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    events = list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 100


def test_adamw_is_fused_on_a_cpu_and_updates_as_the_reference():
    fused, ref = Toy(), Toy()
    opt = build_optimizer(fused, 1e-2, 0.01, torch.device("cpu"))
    assert all(g["fused"] for g in opt.param_groups)
    ref_opt = torch.optim.AdamW(parameter_groups(ref, 0.01, 1e-2), lr=1e-2, foreach=False)
    g = torch.Generator().manual_seed(3)
    for _ in range(5):
        for p, q in zip(fused.parameters(), ref.parameters()):
            p.grad = torch.randn(p.shape, generator=g)
            q.grad = p.grad.clone()
        opt.step()
        ref_opt.step()
    moved = [(p - q0).abs().max() for p, q0 in zip(fused.parameters(), Toy().parameters())]
    assert min(moved) > 1e-3  # the weights did move
    for p, q in zip(fused.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)


def test_warmup_then_linear_decay():
    assert warmup_steps(0.1, 100) == 10 and warmup_steps(25, 100) == 25
    p = nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([p], lr=1.0)
    sched = build_scheduler(opt, 0.1, 100)
    lrs = []
    for _ in range(100):
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    assert lrs[0] == 0 and lrs[5] == pytest.approx(0.5) and lrs[10] == pytest.approx(1.0)
    assert lrs[55] == pytest.approx(0.5) and sched.get_last_lr()[0] == 0


def test_no_weight_decay_on_bias_and_norm():
    decay, no_decay = parameter_groups(Toy(), 0.01)
    assert len(decay["params"]) == 2 and len(no_decay["params"]) == 4
    assert no_decay["weight_decay"] == 0


class FakeClock:
    """A stand-in for the loop's ``time`` module: time passes only when told to."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now


class Slow(Source):
    """Each batch takes 0.04 s (of the fake clock) to produce: 0.4 s for an epoch of 10."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def iter_batches(self, epoch, start=0):
        for batch in super().iter_batches(epoch, start):
            self.clock.now += 0.04
            yield batch


def test_train_seconds_count_each_epoch_once_and_no_evaluation(tmp_path, monkeypatch):
    import bertkit.training.state as state

    clock = FakeClock()
    monkeypatch.setattr(state, "time", clock)

    def slow_eval(model):
        clock.now += 0.3
        return {"f1": 0.0}

    cfg = TrainConfig(epochs=3, lr=1e-2, logging_steps=5)
    res = train(Toy(), Slow(clock), cfg, make_runtime("cpu", "fp32"), tmp_path,
                evaluate=slow_eval)
    assert res.train_seconds == pytest.approx(1.2)  # 3 x 0.4 s of batches; no 0.9 s of eval


def test_models_can_ask_for_a_higher_head_learning_rate():
    class Parser(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.head = nn.Linear(3, 3), nn.Linear(3, 2)

        def lr_for(self, name):
            return 1e-3 if name.startswith("head.") else None

    groups = parameter_groups(Parser(), 0.01, 1e-4)
    by_lr = {(g.get("lr"), g["weight_decay"]): sum(p.numel() for p in g["params"]) for g in groups}
    assert by_lr == {(None, 0.01): 9, (None, 0.0): 3, (1e-3, 0.01): 6, (1e-3, 0.0): 2}
    from bertkit.training.optim import build_optimizer

    opt = build_optimizer(Parser(), 1e-4, 0.01, torch.device("cpu"))
    sched = build_scheduler(opt, 0, 10)
    assert sorted(g["lr"] for g in opt.param_groups) == [1e-4, 1e-4, 1e-3, 1e-3]
    opt.step()
    sched.step()  # the schedule scales every group alike
    assert sorted(round(g["lr"], 8) for g in opt.param_groups) == [9e-5, 9e-5, 9e-4, 9e-4]


def test_sigint_during_the_last_evaluation_stops_with_a_checkpoint(tmp_path):
    """Ctrl-C while dev is scored after the last epoch: checkpoint, exit 130, and resume ends
    the run with the same model (the signal used to be swallowed and the run went on)."""
    import os
    import signal

    model_full, _ = run(tmp_path / "full", Source())
    source = Source()
    evals = []

    def interrupted_eval(m):
        evals.append(1)
        if len(evals) == 3:  # the evaluation after the last epoch
            os.kill(os.getpid(), signal.SIGINT)
        return {"f1": -float(m(source.x, source.y)["loss"])}

    cfg = TrainConfig(epochs=3, lr=1e-2, save_steps=2, logging_steps=1, warmup=0.2)
    with pytest.raises(BertkitError, match="stopped by SIGINT at step 30") as err:
        train(Toy(), source, cfg, make_runtime("cpu", "fp32"), tmp_path / "cut",
              evaluate=interrupted_eval)
    assert err.value.exit_code == 130
    assert (tmp_path / "cut" / "checkpoints" / "step_30").is_dir()
    model_res, res = run(tmp_path / "cut", Source(), resume=True)
    assert res.steps == 30
    for a, b in zip(model_full.state_dict().values(), model_res.state_dict().values()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("terminal", [True, False])
def test_progress_bar_only_on_a_terminal(tmp_path, monkeypatch, terminal):
    """Into a file or pipe rich would print the bar once, at the end, after the epoch lines, so
    there the loop prints plain lines instead (every 30 s; every step here, with the interval 0),
    whatever the logging steps."""
    import io

    from rich.console import Console

    monkeypatch.setattr("bertkit.training.logging.PLAIN_INTERVAL_S", 0.0)
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100)
    cfg = TrainConfig(epochs=1, lr=1e-2, logging_steps=50)
    train(Toy(), Source(n=3), cfg, make_runtime("cpu", "fp32"), tmp_path, console=console)
    text = out.getvalue()
    if terminal:
        assert "━" in text and "ex/s" in text and "(epoch 1/1)" not in text
    else:
        assert "━" not in text
        lines = text.splitlines()
        assert [line.split(" (")[0] for line in lines] == [f"step {i}/{len(lines)}"
                                                         for i in range(1, len(lines) + 1)]
        assert len(lines) > 1 and all("loss " in line and "ETA" in line for line in lines)


def test_resume_with_another_budget_is_exact_at_a_constant_rate(tmp_path):
    """A run with a constant rate after a warm-up in steps, stopped at step 14 of a 40-step
    budget and resumed with a 30-step one, ends with the weights of a 30-step run from the start
    (the budget may change on --resume then: rundir.budget_may_change)."""
    constant = {"lr_schedule": "constant", "warmup": 3}
    full, _ = run(tmp_path / "a", Source(), max_steps=30, **constant)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b", Source(crash_at=15), max_steps=40, **constant)
    resumed, res = run(tmp_path / "b", Source(), resume=True, max_steps=30, **constant)
    assert res.steps == 30
    for p, q in zip(full.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(p, q)
