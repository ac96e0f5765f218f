"""``benchmarks/predict_stream.py --dry-run`` prints its plan and runs nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "predict_stream.py"


def _module():
    spec = importlib.util.spec_from_file_location("benchmark_predict_stream", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scale_dry_run_prints_every_command(tmp_path, capsys):
    mod = _module()
    mod.main(["scale", "--dry-run", "--model", "M", "--sizes", "100,1000", "--work",
              str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == [
        "100 sentences", "1000 sentences", "1000 sentences --jobs 2",
        "1000 sentences killed at half", "1000 sentences resumed", "1000 sentences --shard 1/10"]
    assert out[2].endswith(f"-o {tmp_path}/out-1000-jobs2.conll --device cpu --jobs 2")
    assert "(SIGKILL at 500 records)" in out[3] and out[4].endswith("--resume")
    assert out[5].endswith(f"-i {tmp_path}/corpus-1000.txt -o {tmp_path}/out-1000-shard1of10.conll"
                           " --device cpu --shard 1/10")
    assert list(tmp_path.iterdir()) == []  # nothing run, nothing written


def test_scale_rows_pick_part_of_the_plan(tmp_path, capsys):
    mod = _module()
    mod.main(["scale", "--dry-run", "--model", "M", "--sizes", "100,1000", "--rows", "jobs",
              "--work", str(tmp_path)])
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == [
        "1000 sentences --jobs 2"]
    import pytest

    with pytest.raises(SystemExit, match="unknown --rows"):
        mod.main(["scale", "--dry-run", "--model", "M", "--rows", "sizes,speed"])


def test_speed_dry_run_names_every_row(capsys):
    _module().main(["speed", "--dry-run"])
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{row}: measured" for row in _module().SPEED_ROWS]
    assert {"stock b32 sorted: measured", "bertkit packed: measured",
            "onnxruntime fp32: measured"} <= set(out)


def test_corpus_input_repeats_the_source(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("a b\n\nc d\n", encoding="utf-8")
    out = _module().corpus_input(src, 5, tmp_path / "in.txt")
    assert out.read_text().splitlines() == ["a b", "c d", "a b", "c d", "a b"]
