"""benchmarks/plateau_curves.py: the command each configuration runs, the crossing of an accuracy
threshold, and the merged table from a run directory's records."""

import importlib.util
import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def script():
    spec = importlib.util.spec_from_file_location("bench_plateau", BENCHMARKS / "plateau_curves.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_configuration_is_a_valid_pretrain_command(script, tmp_path):
    from bertkit.tasks.pretrain import PretrainConfig

    for name, settings in script.CONFIGS.items():
        cmd = script.pretrain_command(name, settings, tmp_path)
        assert cmd[cmd.index("--config") + 1] == settings["config"]
        assert cmd[cmd.index("--precision") + 1] == "fp32"
        alpha = settings.get("vocab_limit_alphabet")
        assert cmd[cmd.index("--vocab") + 1] == str(
            tmp_path / (f"vocab-{settings['vocab_corpus']}-{settings['vocab_size']}"
                        + (f"-alpha{alpha}" if alpha else "")))
        assert cmd[cmd.index("--valid") + 1] == settings.get("valid_corpus", "scientific")
        corpus = cmd[cmd.index("--corpus") + 1]
        assert corpus == settings["vocab_corpus"] or (
            settings.get("corpus_words") and corpus.endswith(f"-{settings['corpus_words']}w.txt"))
        flags = {k: v for k, v in settings.items() if k not in script.NOT_FLAGS}
        cfg = PretrainConfig(corpus="x.txt", vocab="v", **flags)
        cfg.validate()  # the settings are ones bertkit accepts
        assert cfg.max_steps * cfg.tokens_per_step >= settings["max_tokens"]


def test_corpus_subset_cuts_at_an_article_end(script, tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "corpus-general").mkdir(parents=True)
    (root / "corpus-general" / "train.txt").write_text(
        "a b c\nd e\n\nf g h i\n\nj k\n", encoding="utf-8")
    monkeypatch.setenv("BERTKIT_DATA", str(root))
    (tmp_path / "w").mkdir()
    out = script.corpus_subset(tmp_path / "w", "general", 4)
    assert out.read_text(encoding="utf-8") == "a b c\nd e\n"  # 5 words: the first article whole
    assert script.corpus_subset(tmp_path / "w", "general", 4) == out  # written once


def test_crossing_interpolates_between_points_and_says_none_if_never(script):
    points = [{"tokens": 0, "seconds": 0.0, "accuracy": 0.05},
              {"tokens": 1000, "seconds": 100.0, "accuracy": 0.12},
              {"tokens": 2000, "seconds": 200.0, "accuracy": 0.28}]
    assert script.crossing(points, 0.20) == {"tokens": 1500, "seconds": 150.0}
    assert script.crossing(points, 0.05) == {"tokens": 0, "seconds": 0.0}
    assert script.crossing(points, 0.35) is None


def test_collect_and_merge_from_a_run_directory(script, tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    (run / "environment.json").write_text("{}")
    (run / "config.yaml").write_text("lr: 0.001\n")
    records = [{"type": "train", "step": 10, "tokens_per_s": 500.0, "time_s": 5},
               {"type": "eval", "step": 10, "train_tokens": 40960, "train_seconds": 80.0,
                "loss": 7.0, "accuracy": 0.11, "time_s": 90},
               {"type": "train", "step": 20, "tokens_per_s": 700.0, "time_s": 150},
               {"type": "eval", "step": 20, "train_tokens": 81920, "train_seconds": 160.0,
                "loss": 6.0, "accuracy": 0.23, "time_s": 180}]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    monkeypatch.setattr(script, "RESULTS", tmp_path / "results")
    name = "a-4x256-b32-const1e-3"
    out = script.write_result(name, run, [[0.0, 3.5], [1e12, 4.5]], ["bertkit"], None)
    saved = json.loads(out.read_text())
    assert [p["tokens"] for p in saved["points"]] == [40960, 81920]
    assert saved["points"][1]["tokens_per_s"] == 600.0  # mean of the train records so far
    assert saved["crossings"]["0.20"] == {"tokens": 71680, "seconds": 140.0}
    assert saved["crossings"]["0.35"] is None and not saved["finished"]
    table = script.merge().read_text()
    row = next(line for line in table.splitlines() if line.startswith(f"| {name}"))
    assert "0.07 M / 2 min" in row and "not reached (> 0.08 M)" in row and "23.0%" in row


def test_gpu_stages_run_the_named_recipes_on_cuda_in_bf16(script):
    stages = script.gpu_stages()
    assert [s["name"] for s in stages] == [f"plateau_{n}" for n in script.GPU_STAGES]
    for stage, (name, gpu) in zip(stages, script.GPU_STAGES.items()):
        argv = [a.format(python="py", data="/d", work="/w", repo="/r") for a in stage["argv"]]
        value = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("-")}
        assert argv[:4] == ["py", "-m", "bertkit", "pretrain"]
        assert value["--device"] == "cuda" and value["--precision"] == "bf16"
        assert value["--corpus"] == "/d/plateau/train.txt.gz"
        assert value["--vocab"] == f"/d/plateau/vocab-scientific-{script.CONFIGS[name]['vocab_size']}"
        assert value["--max-tokens"] == str(gpu["max_tokens"]) and value["-o"] == f"/w/plateau/{name}"
        assert value["--valid-mask-prob"] == "0.15"  # the gate is read at BERT's masking rate
        assert stage["timeout_s"] == gpu["timeout_s"]
