"""Settings that must be refused before anything runs."""

import pytest

from bertkit.errors import BertkitError


def test_non_finite_lr_and_unsupported_devices_are_refused():
    from bertkit.training import TrainConfig
    from bertkit.training.devices import resolve_device

    for lr in (float("inf"), float("nan"), 0.0):
        with pytest.raises(BertkitError, match="--lr"):
            TrainConfig(lr=lr).check_ranges()
    for name in ("meta", "xpu"):
        with pytest.raises(BertkitError, match="device"):
            resolve_device(name)


def test_missing_tensorboard_is_reported_before_the_run(monkeypatch):
    import importlib.util

    from bertkit.training import TrainConfig

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tensorboard" else real(name, *a))
    with pytest.raises(BertkitError, match="tensorboard package"):
        TrainConfig(report_to="tensorboard").validate()
    TrainConfig(report_to="none").validate()


def test_examples_trained_counts_max_steps_runs():
    from bertkit.tasks.ner.config import NERConfig

    assert NERConfig(epochs=3).examples_trained(20, steps=999) == 60
    cfg = NERConfig(max_steps=5, batch_size=8)  # 3 steps an epoch of 20: 8 + 8 + 4
    assert cfg.examples_trained(20, steps=5) == 20 + 16
    assert cfg.examples_trained(20, steps=3) == 20
    assert NERConfig(max_steps=2, batch_size=8).examples_trained(120, steps=2) == 16


def test_best_record_is_the_selecting_evaluation_not_the_epochs_first():
    from bertkit.training.batches import TrainResult

    history = [{"step": 2, "epoch": 1, "f1": 0.07}, {"step": 4, "epoch": 1, "f1": 0.11},
               {"step": 6, "epoch": 1, "f1": 0.09}]
    assert TrainResult(steps=6, history=history, best_epoch=1, best_index=1).best_record["f1"] == 0.11
    assert TrainResult(steps=6, history=history).best_record is None
