"""benchmarks/gpu_check.py on the CPU (``--dry-run``): the summary JSON it writes, a failing or
hanging stage recorded without stopping the others, and (slow) the whole dry run."""

import importlib.util
import json
import math
import tarfile
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _gpu_check():
    spec = importlib.util.spec_from_file_location("bench_gpu_check", BENCHMARKS / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _numbers(tree):
    """Every int/float leaf of a JSON tree."""
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _numbers(v)
    elif isinstance(tree, list):
        for v in tree:
            yield from _numbers(v)
    elif isinstance(tree, (int, float)) and not isinstance(tree, bool):
        yield tree


def test_dry_run_records_each_stage_and_goes_on_after_a_failure_and_a_timeout(tmp_path):
    gpu_check = _gpu_check()
    stages = tmp_path / "stages.json"
    stages.write_text(json.dumps([
        {"name": "fails", "argv": ["{python}", "-c", "import sys; sys.exit(3)"]},
        {"name": "hangs", "argv": ["{python}", "-c", "import time; time.sleep(60)"], "timeout_s": 2},
        {"name": "ok", "argv": ["{python}", "-c", "print('stage ok in', r'{work}')"]},
    ]))
    out = tmp_path / "out"
    rc = gpu_check.main(["--dry-run", "--only", "adapt", "--data", str(tmp_path / "no-data"),
                         "--adapt-stages", str(stages), "--work-dir", str(tmp_path / "work"),
                         str(out)])
    assert rc == 1  # a stage failed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dry_run"] is True
    assert list(summary["steps"]) == list(gpu_check.STEPS)
    assert summary["steps"]["preflight"]["status"] == "passed"
    assert summary["environment"]["packages"]["torch"]
    assert summary["dry_run_data"].endswith("synthetic-data")  # no shared data: a stand-in
    assert "restored to fp32" in summary["model"]["source"]
    for name in ("unit_tests", "bench", "pretrain", "ner", "bench_compile", "ner_step",
                 "ner_step_base"):
        assert summary["steps"][name] == {"status": "skipped", "reason": "not in --only"}
    adapt = summary["steps"]["adapt"]
    assert adapt["status"] == "timeout"
    assert adapt["stages"]["fails"]["rc"] == 3 and adapt["stages"]["ok"]["rc"] == 0
    assert adapt["stages"]["hangs"]["rc"] is None and adapt["stages"]["hangs"]["seconds"] < 30
    assert adapt["checks"] == {"fails_ran": False, "hangs_ran": False, "ok_ran": True}
    assert summary["goals"]["cuda_tests_pass"] is False and summary["goals"]["mfu_T128_best"] is None
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.log", "logs.tar.gz", "summary.json"]
    with tarfile.open(out / "logs.tar.gz") as tar:
        log = tar.extractfile("gpu_check/logs/adapt_ok.log").read().decode()
        assert f"stage ok in {tmp_path / 'work'}" in log
        assert not any("minilm" in n or "carry" in n for n in tar.getnames())
    # the carried folder the dry run made: slices of the data, seqeval, the int8 encoder
    carry = tmp_path / "work" / "carry"
    train = (carry / "data" / "ner" / "bc5cdr" / "train.tsv").read_text()
    assert train.count("\n\n") == gpu_check.DRY["ner_train"] - 1
    assert (carry / "site" / "seqeval" / "__init__.py").is_file()
    assert sorted(p.name for p in (carry / "minilm-q8").iterdir()) == [
        "encoder-files.tar.xz", "encoder-weights.npz.xz"]  # int8: see benchmarks/_carry.py


def test_sentences_keeps_whole_sentences(tmp_path):
    gpu_check = _gpu_check()
    f = tmp_path / "x.tsv"
    f.write_text("-DOCSTART-\tO\n\na\tO\nb\tB-X\n\n\nc\tO\n\nd\tO\n")
    assert gpu_check._sentences(f, 2) == "-DOCSTART-\tO\n\na\tO\nb\tB-X\n\nc\tO\n"
    assert gpu_check._sentences(f, 9).endswith("d\tO\n")


@pytest.mark.slow
def test_whole_dry_run_passes_with_finite_figures(tmp_path):
    gpu_check = _gpu_check()
    out = tmp_path / "out"
    rc = gpu_check.main(["--dry-run", "--data", str(tmp_path / "no-data"), str(out)])
    summary = json.loads((out / "summary.json").read_text())
    steps = summary["steps"]
    assert rc == 0, {k: v.get("status") for k, v in steps.items()}
    assert all(steps[k]["status"] == "passed" for k in gpu_check.STEPS), steps
    assert steps["unit_tests"]["counts"]["passed"] == len(steps["unit_tests"]["tests"]) >= 8
    for name in ("bench", "bench_compile"):
        fig = steps[name]["figures"]
        assert {"T32_bertkit", "T32_stock", "T64_bertkit", "T64_stock"} <= set(fig)
        assert fig["T32_bertkit"]["real_tokens_per_s_median"] > 0 and fig["T32_ratio"] > 0
        assert all(math.isfinite(x) for x in _numbers(fig))
    runs = steps["pretrain"]["runs"]
    assert runs["cuda"]["precision"] == "bf16" and runs["cpu"]["precision"] == "fp32"
    assert len(runs["cuda"]["train_losses"]) == gpu_check.DRY["pretrain_steps"]
    assert all(math.isfinite(x) for x in [*_numbers(steps["pretrain"]), *_numbers(steps["ner"])])
    assert 0 <= steps["ner"]["runs"]["cuda"]["test_f1"] <= 1
    for name in ("ner_step", "ner_step_base"):  # the NER step: no host sync, the stock one has
        sides = steps[name]["figures"]["sides"]
        assert sides["bertkit-crf"]["host_syncs_per_step"] == 0
        assert sides["bertkit-softmax"]["host_syncs_per_step"] == 0
        assert sides["stock"]["host_syncs_per_step"] > 0  # transformers' padding_mask.all()
        assert all(s["median_step_ms"] > 0 for s in sides.values())
