"""benchmarks/adapt_gpu.py (issue 62, step 2): the int8 encoder carried to the GPU machine, the
token budget, stages skipped when done or out of time, and (integration) the CPU dry run."""

import importlib.util
import json
import os
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
DATA = Path(os.environ.get("BERTKIT_DATA", BENCHMARKS.parents[1] / "shared" / "data"))


def _adapt_gpu():
    spec = importlib.util.spec_from_file_location("bench_adapt_gpu", BENCHMARKS / "adapt_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(tmp_path, **kw):
    base = {"dry_run": False, "output": str(tmp_path / "out"), "work_dir": str(tmp_path / "work"),
            "budget_s": 100.0, "carry": str(tmp_path / "carry"), "data": str(tmp_path),
            "pretrain_s": 150.0, "max_tokens": 37_000_000, "assume_rate": 160_000.0,
            "tasks": ["bc5cdr"], "finetune_budget": None, "jobs": None}
    return SimpleNamespace(**{**base, **kw})


def test_packed_encoder_restores_within_half_a_step_and_keeps_outliers_exactly(tmp_path):
    import torch
    from transformers import AutoModel, BertConfig, BertModel, BertTokenizerFast

    adapt_gpu = _adapt_gpu()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(2043)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    torch.manual_seed(0)
    net = BertModel(BertConfig(vocab_size=len(vocab), hidden_size=128, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=512))
    ffn = "encoder.layer.0.intermediate.dense.weight"  # 512 x 128: quantised
    with torch.no_grad():  # past +-127 steps of their rows: about 136 and 270
        net.embeddings.word_embeddings.weight[7, 3] = 5.0
        net.state_dict()[ffn][5, 3] = 1.0
    src, packed, dst = tmp_path / "src", tmp_path / "packed", tmp_path / "dst"
    net.save_pretrained(src)
    BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt")).save_pretrained(src)
    packed.mkdir()
    info = adapt_gpu.pack_encoder(src, packed)
    adapt_gpu.unpack_encoder(packed, dst)
    back = AutoModel.from_pretrained(dst, dtype=torch.float32).state_dict()
    orig = net.state_dict()
    emb = "embeddings.word_embeddings.weight"
    assert back[emb][7, 3].item() == 5.0 and back[ffn][5, 3].item() == 1.0  # kept exactly
    for name, divisor in ((emb, 12), (ffn, 24)):
        step = orig[name].std(dim=1, keepdim=True) / divisor
        assert ((back[name] - orig[name]).abs() <= step / 2 + 1e-7).all()
        assert not torch.equal(back[name], orig[name])  # quantised, not copied
    assert torch.equal(back["embeddings.LayerNorm.weight"], orig["embeddings.LayerNorm.weight"])
    assert 0.005 < info["relative_weight_error"] < 0.03
    raw = sum(v.numel() * 4 for v in orig.values())
    assert info["bytes"] < raw / 3  # int8 + xz against fp32
    assert (dst / "tokenizer.json").is_file() and (dst / "config.json").is_file()


def test_token_budget_from_the_calibrated_rate_in_whole_batches(tmp_path):
    adapt_gpu = _adapt_gpu()
    run = adapt_gpu.Adapt(_args(tmp_path, pretrain_s=100.0))
    run.summary["stages"]["calibrate"] = {"tokens_per_second": 200_000.0}
    tokens, how = run.token_budget()
    per_batch = 128 * 128
    assert tokens == int(200_000 * 100 * 0.9) // per_batch * per_batch == 17_989_632
    assert "calibrated 200000 tokens/s" in how
    run.summary["stages"]["calibrate"] = {"tokens_per_second": 10_000_000.0}
    assert run.token_budget()[0] == 37_000_000 // per_batch * per_batch  # capped at 37 M
    run.summary["stages"]["calibrate"] = {"status": "failed"}
    tokens, how = run.token_budget()
    assert tokens == int(160_000 * 100 * 0.9) // per_batch * per_batch and "assumed" in how


def test_steady_rate_leaves_out_the_first_window(tmp_path):
    adapt_gpu = _adapt_gpu()
    run = tmp_path / "run"
    run.mkdir()
    assert adapt_gpu.steady_rate(run) is None  # nothing logged
    (run / "results.json").write_text(json.dumps({"tokens_per_second": 900.0}))
    assert adapt_gpu.steady_rate(run) == 900.0  # one window or none: the whole run's rate
    lines = [{"type": "train", "step": 10 * i, "tokens_per_s": r}
             for i, r in enumerate([50.0, 1000.0, 1200.0, 1100.0], 1)]
    lines.insert(2, {"type": "eval", "step": 20, "loss": 3.0})
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert adapt_gpu.steady_rate(run) == 1100.0  # the median of 1000, 1200, 1100


def test_a_done_stage_is_skipped_and_none_starts_when_the_budget_is_spent(tmp_path):
    adapt_gpu = _adapt_gpu()
    run = adapt_gpu.Adapt(_args(tmp_path, budget_s=0.0))
    (run.ext).mkdir(parents=True)
    (run.ext / "config.json").write_text("{}")

    def must_not_run():
        raise AssertionError("ran")

    run.stage("extend", must_not_run)
    run.stage("calibrate", must_not_run)
    assert run.summary["stages"]["extend"] == {"status": "done before"}
    assert run.summary["stages"]["calibrate"]["status"] == "skipped"
    assert "time budget spent" in run.summary["stages"]["calibrate"]["reason"]


def test_a_stage_that_raises_is_recorded_and_the_summary_written(tmp_path):
    adapt_gpu = _adapt_gpu()
    run = adapt_gpu.Adapt(_args(tmp_path))

    def broken():
        raise FileNotFoundError("carry/data.tar.xz")

    run.stage("unpack", broken)
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["stages"]["unpack"]["status"] == "error"
    assert saved["stages"]["unpack"]["error"] == "FileNotFoundError: carry/data.tar.xz"


def test_the_suite_holds_the_five_tasks_in_the_issues_order():
    from bertkit.bench.suite import check_suite, load_suite

    adapt_gpu = _adapt_gpu()
    suite = load_suite(str(adapt_gpu.SUITE))
    assert check_suite(suite) == []
    assert [t.name for t in suite.tasks] == list(adapt_gpu.TASKS)
    assert "bc2gm" not in adapt_gpu.TASKS and suite.seeds == [1, 2, 3]


@pytest.mark.integration
@pytest.mark.slow
def test_dry_run_end_to_end_on_data_slices(tmp_path):
    """Two tasks (an NER and the RE set) of the five, to stay near 3 minutes on 2 busy cores."""
    if not (DATA / "ner" / "jnlpba" / "train.tsv").is_file():
        pytest.skip("the shared data is not under BERTKIT_DATA")
    adapt_gpu = _adapt_gpu()
    out = tmp_path / "out"
    rc = adapt_gpu.main(["--dry-run", "--data", str(DATA), "--tasks", "bc5cdr,chemprot",
                         "--work-dir", str(tmp_path / "work"), "--budget-s", "900", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    statuses = {k: v["status"] for k, v in summary["stages"].items()}
    assert rc == 0, statuses
    assert list(statuses) == ["unpack", "extend", "calibrate", "pretrain", "bench-bc5cdr",
                              "bench-chemprot", "report", "provenance"]
    assert summary["stages"]["extend"]["vocab_size"] == 30522 + 300  # MiniLM's + --add 300
    assert summary["stages"]["calibrate"]["tokens_per_second"] > 0
    pre = summary["stages"]["pretrain"]
    assert pre["max_tokens"] == 3 * 4 * 64 and pre["results"]["steps"] == 3
    assert sorted(p.name for p in out.iterdir()) == [
        "adapt.log", "bench.tar.gz", "provenance.json", "report.md", "summary.json"]
    report = (out / "report.md").read_text()
    assert "## M+D against M" in report and "| bc5cdr |" in report and "| chemprot |" in report
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["name"] == "M+D" and prov["pretraining_tokens"] == 768
    assert prov["recipe"]["extend"].endswith("--add 300")
    with tarfile.open(out / "bench.tar.gz") as tar:
        names = tar.getnames()
    assert "adapt/bench/report.json" in names
    assert any(n.startswith("adapt/bench/runs/M+D/chemprot/seed-1/") for n in names)
    assert not any(n.endswith(".safetensors") for n in names)
    # a rerun into the same work folder skips what is done, keeps the finished fine-tunes
    again = tmp_path / "again"
    assert adapt_gpu.main(["--dry-run", "--data", str(DATA), "--tasks", "bc5cdr", "--work-dir",
                           str(tmp_path / "work"), "--budget-s", "900", str(again)]) == 0
    rerun = json.loads((again / "summary.json").read_text())["stages"]
    assert [rerun[k]["status"] for k in ("unpack", "extend", "calibrate", "pretrain")] == \
        ["done before"] * 4
    assert rerun["pretrain"]["max_tokens"] == 768 and rerun["bench-bc5cdr"]["status"] == "passed"
    assert json.loads((again / "provenance.json").read_text())["pretraining_tokens"] == 768
    log = (tmp_path / "work" / "logs" / "bench-bc5cdr.log").read_text()
    assert log.count("$ ") == 2 and "stages: 2 run, 0 kept" in log
    assert log.rstrip().endswith(f"stages: 0 run, 2 kept; results in {tmp_path / 'work' / 'bench'}")
