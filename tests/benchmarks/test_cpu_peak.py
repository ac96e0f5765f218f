"""benchmarks/cpu_peak.py: model FLOPs per token (PaLM appendix B), MFU, the non-embedding
parameter count, and one matmul measurement."""

import importlib.util
from pathlib import Path

import pytest
import torch
from torch import nn

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _cpu_peak():
    spec = importlib.util.spec_from_file_location("bench_cpu_peak", BENCHMARKS / "cpu_peak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_model_flops_and_mfu():
    cp = _cpu_peak()
    # MiniLM-L6-H384 at 128 tokens: 6 x 10.6 M + 12 x 6 x 384 x 128 (training), a third forward
    train = cp.model_flops_per_token(10_600_000, 6, 384, 128)
    assert train == 6 * 10_600_000 + 12 * 6 * 384 * 128
    assert cp.model_flops_per_token(10_600_000, 6, 384, 128, training=False) == pytest.approx(train / 3)
    assert cp.model_flops_per_token(1, 1, 1, 1, extra_params=2) == 6 * 3 + 12
    # 1,000 tokens/s at 64 MFLOP a token on a 128 GFLOP/s peak: half of it
    assert cp.mfu(1000, 64e6, 128.0) == pytest.approx(0.5)


def test_non_embedding_parameters_leave_out_lookups():
    cp = _cpu_peak()
    model = nn.Sequential(nn.Embedding(100, 8), nn.Linear(8, 4))
    assert cp.non_embedding_parameters(model) == 8 * 4 + 4


def test_one_measurement_counts_the_products():
    cp = _cpu_peak()
    got = cp.measure((64, 32, 16), torch.float32, 0.01, 1)
    assert got["calls"] >= 1 and got["wall_s"] >= 0.01
    assert got["gflops_wall"] == pytest.approx(2 * 64 * 32 * 16 * got["calls"] / got["wall_s"] / 1e9)
