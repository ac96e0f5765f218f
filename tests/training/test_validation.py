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
