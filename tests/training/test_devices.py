"""--precision auto: bf16 autocast on a CPU with AMX-BF16 or AVX512-BF16, fp32 elsewhere, and the reason recorded
(the capability check mocked both ways, so these pass on any machine)."""

import json

import pytest
import torch
from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.training import TrainConfig, train
from bertkit.training import devices
from bertkit.training.devices import make_runtime
from tests.training.test_loop import Source, Toy


@pytest.fixture
def amx(monkeypatch):
    """Set whether the CPU 'has' AMX-BF16: ``amx(True)`` / ``amx(False)`` (and, second
    argument, AVX512-BF16: none unless given)."""
    def set_(present: bool, avx512: bool = False) -> None:
        monkeypatch.setattr(devices, "cpu_has_amx_bf16", lambda: present)
        monkeypatch.setattr(devices, "cpu_has_avx512_bf16", lambda: avx512)
    return set_


def test_auto_is_bf16_on_a_cpu_with_amx(amx):
    amx(True)
    rt = make_runtime("cpu", "auto")
    assert rt.dtype is torch.bfloat16 and rt.precision == "bf16"
    assert rt.reason == "auto: bf16, CPU has AMX-BF16"
    with rt.autocast():
        y = torch.nn.Linear(8, 8)(torch.randn(2, 8))
    assert y.dtype is torch.bfloat16


def test_auto_is_fp32_on_a_cpu_without_amx(amx):
    amx(False)
    rt = make_runtime("cpu", "auto")
    assert rt.dtype is None and rt.precision == "fp32"
    assert rt.reason == "auto: fp32, CPU lacks AMX-BF16 and AVX512-BF16"
    with rt.autocast():
        assert torch.nn.Linear(8, 8)(torch.randn(2, 8)).dtype is torch.float32


def test_auto_is_bf16_on_a_cpu_with_avx512_bf16(amx):
    """AMD Zen 4 / Intel Cooper Lake: bf16 products in AVX-512 units, faster than fp32."""
    amx(False, avx512=True)
    rt = make_runtime("cpu", "auto")
    assert rt.dtype is torch.bfloat16 and rt.reason == "auto: bf16, CPU has AVX512-BF16"


def test_forced_precisions_ignore_the_cpu(amx):
    amx(True)
    rt = make_runtime("cpu", "fp32")
    assert rt.dtype is None and rt.reason == "set to fp32 (--precision or a recipe), not auto"
    amx(False)
    rt = make_runtime("cpu", "bf16")
    assert rt.dtype is torch.bfloat16 and rt.reason == "set to bf16 (--precision or a recipe), not auto"
    with pytest.raises(BertkitError, match="fp16 mixed precision needs a CUDA device"):
        make_runtime("cpu", "fp16")
    with pytest.raises(BertkitError, match="unknown precision 'fp8'"):
        make_runtime("cpu", "fp8")


def test_the_choice_is_printed_with_its_reason(amx):
    amx(True)
    console = Console(record=True, width=200)
    make_runtime("cpu", "auto", console)
    assert console.export_text().strip() == "device cpu, precision bf16 (auto: bf16, CPU has AMX-BF16)"


@pytest.mark.parametrize("check, probe, yes, no", [
    ("cpu_has_amx_bf16", "_is_amx_tile_supported", {"avx512f", "amx_bf16", "amx_tile"},
     {"avx2", "avx512_bf16"}),  # AVX512-BF16 alone is not AMX
    ("cpu_has_avx512_bf16", "_is_avx512_bf16_supported", {"avx2", "avx512f", "avx512_bf16"},
     {"avx2", "fma"}),  # AVX2 only: fp32
])
def test_cpuinfo_is_the_fallback_without_torchs_probe(monkeypatch, check, probe, yes, no):
    has = getattr(devices, check)
    has.cache_clear()
    monkeypatch.delattr(torch.cpu, probe, raising=False)
    try:
        monkeypatch.setattr(devices, "_cpu_flags", lambda: yes)
        assert has() is True
        has.cache_clear()
        monkeypatch.setattr(devices, "_cpu_flags", lambda: no)
        assert has() is False
    finally:
        has.cache_clear()


def test_cpu_flags_read_proc_cpuinfo(monkeypatch, tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 amx_bf16 amx_tile\n\n")
    real = devices.Path
    monkeypatch.setattr(devices, "Path", lambda p: info if p == "/proc/cpuinfo" else real(p))
    assert {"amx_bf16", "avx2"} <= devices._cpu_flags()
    info.unlink()
    assert devices._cpu_flags() == set()


@pytest.mark.parametrize("present, precision, reason", [
    (True, "bf16", "auto: bf16, CPU has AMX-BF16"),
    (False, "fp32", "auto: fp32, CPU lacks AMX-BF16 and AVX512-BF16"),
])
def test_environment_json_records_precision_and_reason(tmp_path, amx, present, precision, reason):
    amx(present)
    model = Toy()
    cfg = TrainConfig(epochs=1, lr=1e-2, save_steps=0, logging_steps=1)
    train(model, Source(n=2), cfg, make_runtime("cpu", "auto"), tmp_path)
    env = json.loads((tmp_path / "environment.json").read_text())
    assert (env["precision"], env["precision_reason"]) == (precision, reason)
    # autocast never touches the stored weights: they stay fp32, loadable anywhere
    assert {p.dtype for p in model.state_dict().values()} == {torch.float32}
