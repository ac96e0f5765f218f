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
