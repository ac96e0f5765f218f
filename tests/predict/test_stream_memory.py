"""Memory stays flat whatever the input's size: peak RSS of a 10x larger input within a bound.

Each run is a fresh process (peak RSS, ``VmHWM``, is per process). The quick test streams through
the driver with a trivial predictor (the driver's own memory: reader, chunks, writer, state); the
slow one runs ``predict ner`` with the tiny random model on 10 k and 100 k lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.predict.conftest import text_input

DRIVER = r"""
import sys
from bertkit.predict import StreamOptions, StreamPredictor, stream_predict
pred = StreamPredictor("text", lambda recs: [r.text.upper() + "\n" for r in recs], sys.argv[3])
stream_predict(pred, sys.argv[1], sys.argv[2], StreamOptions(chunk_size=1000))
print([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1])
"""

NER = r"""
import sys
from bertkit.cli import app
from typer.testing import CliRunner
res = CliRunner().invoke(app, ["predict", "ner", "-m", sys.argv[3], "-i", sys.argv[1], "-o",
                               sys.argv[2], "--device", "cpu", "--chunk-size", "2000"])
assert res.exit_code == 0, res.output
print([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1])
"""


def _peak_kib(script: str, inp: Path, out: Path, model: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    res = subprocess.run([sys.executable, "-c", script, str(inp), str(out), model],
                         capture_output=True, text=True, env=env, timeout=1800)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.split()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_driver_memory_is_flat(tmp_path, ner_model):
    small = _peak_kib(DRIVER, text_input(tmp_path / "s.txt", 10_000), tmp_path / "s.out",
                      ner_model)
    big_in = text_input(tmp_path / "b.txt", 100_000)
    big = _peak_kib(DRIVER, big_in, tmp_path / "b.out", ner_model)
    assert (tmp_path / "b.out").stat().st_size > big_in.stat().st_size * 0.9
    # KiB; measured 0.4 MiB apart, where a driver holding every record grows by 42 MiB
    assert big - small < 8 * 1024, (small, big)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_predict_ner_memory_is_flat(tmp_path, ner_model):
    small = _peak_kib(NER, text_input(tmp_path / "s.txt", 10_000), tmp_path / "s.conll",
                      ner_model)
    big = _peak_kib(NER, text_input(tmp_path / "b.txt", 100_000), tmp_path / "b.conll",
                    ner_model)
    print(f"peak RSS predict ner: 10k lines {small} KiB, 100k lines {big} KiB")
    assert big - small < 32 * 1024, (small, big)
