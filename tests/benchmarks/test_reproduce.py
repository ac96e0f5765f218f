"""benchmarks/reproduce.py (issue 43): the encoders as recipes, the plan's stages and
thread-hour estimates, the command lines against the real CLI, and merge on a fabricated bench
results folder. No training."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def rp():
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("benchmark_reproduce2", BENCHMARKS / "reproduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def plan(rp):
    return rp.build_plan(Path("/w"), Path("/b"), Path("/g"))


def test_plan_stages_dependencies_and_estimates(rp, plan):
    encoders = ["R", "G", "S", "GvS", "S-span", "G+D", "G+G", "G+D37", "G+D37sv", "M", "S-half"]
    assert list(rp.ENCODERS) == encoders
    assert list(plan) == [f"{k}-{e}" for e in encoders for k in ("pretrain", "export", "bench")
                          ] + ["bench-devgrid"]
    seen = set()
    for name, stage in plan.items():  # dependencies come first
        assert set(stage.deps) <= seen, name
        seen.add(name)
    # question 2 continues the released G (and takes S's pieces from the released S): no
    # pretraining of its own to wait for
    assert plan["pretrain-G+D37sv"].deps == [] and plan["pretrain-G+D37"].deps == []
    extend, run = plan["pretrain-G+D37sv"].commands
    assert extend[extend.index("--model") + 1] == str(rp.ENCODERS_DIR / "G")
    assert extend[extend.index("--vocab") + 1] == str(rp.ENCODERS_DIR / "S")
    assert f"model={rp.ENCODERS_DIR / 'G'}" in plan["pretrain-G+D37"].commands[0]
    assert plan["pretrain-G+D"].deps == ["pretrain-G"]
    # from the v1 logs: phase A ~5.8 k tokens/s, phase B ~6.5 k on one thread
    r = rp.rates()
    assert 4000 < r["tokens_per_s"]["seq64"] < 8000 and 4000 < r["tokens_per_s"]["seq128"] < 9000
    assert 1.2 < r["minutes_per_seed"]["ner"] < 2.5
    assert 1.3 < plan["pretrain-G"].hours < 2.2  # 37 M tokens; v1 logged ~1.6 h
    assert plan["pretrain-S-half"].hours == pytest.approx(plan["pretrain-S"].hours / 2, rel=0.05)
    assert plan["pretrain-G+D37"].hours > 2.5 * plan["pretrain-G+D"].hours
    assert plan["pretrain-R"].hours < 0.05
    assert 0.5 < plan["bench-G"].hours < 3 and plan["bench-devgrid"].hours > 3 * plan["bench-G"].hours


def test_commands_name_real_recipes_and_options(rp, plan):
    from typer.main import get_command

    from bertkit.workflows import recipes
    from bertkit.cli import app

    cli = get_command(app)
    for stage in plan.values():
        for cmd in stage.commands:
            if cmd[:3] != ["{python}", "-m", "bertkit"]:
                assert cmd[1].endswith("reproduce.py") and cmd[2] == "export"
                continue
            words = [a for a in cmd[3:] if not a.startswith("-")]
            group = cli
            while hasattr(group, "commands") and words and words[0] in group.commands:
                group = group.commands[words.pop(0)]
            known = {o for p in group.params for o in getattr(p, "opts", [])}
            flags = [a for a in cmd[3:] if a.startswith("-")]
            assert set(flags) <= known, (stage.name, set(flags) - known)
            if cmd[3] == "run":
                recipes.load(recipes.find(cmd[4]))  # the recipe exists and parses


def test_encoder_recipes_differ_from_s_only_where_meant():
    """G, GvS and S-span are mini-scibert (S) with their corpus, vocabulary corpus or masking
    changed; G+D and G+G are G's phase B on one corpus for a third of the budget."""
    from bertkit.workflows import recipes

    def stages(name):
        return {s.name: s.settings for s in recipes.load(recipes.find(name)).stages}

    s = stages("mini-scibert")
    gen = {"corpus": "$BERTKIT_DATA/corpus-general/train.txt",
           "valid": "$BERTKIT_DATA/corpus-general/valid.txt"}
    g = stages("mini-G")
    assert g["vocab"] == {**s["vocab"], "corpus": gen["corpus"]}
    for phase in ("seq64", "seq128"):
        assert g[phase] == {**s[phase], **gen}
        assert stages("mini-S-span")[phase] == {**s[phase], "masking": "span", "sbo": True}
    gvs = stages("mini-GvS")
    assert gvs["vocab"] == g["vocab"] and gvs["seq64"] == s["seq64"]
    for name, corpus in (("mini-G-plus-D", "$BERTKIT_DATA/corpus/train.txt"), ("mini-G-plus-G", gen["corpus"])):
        (main,) = stages(name).values()
        assert main["model"] == "$BERTKIT_MINI_WORK/G/seq128/model" and main["corpus"] == corpus
        assert main["max_tokens"] == 37_000_000 // 3
        same = {k: v for k, v in s["seq128"].items() if k not in ("model", "corpus", "valid",
                                                                  "max_tokens")}
        assert {k: main[k] for k in same} == same
    r = stages("mini-R")
    assert r["init"]["lr"] == 1e-12 and r["init"]["max_steps"] == 1
    assert r["init"]["config"] == s["seq64"]["config"] and r["vocab"] == s["vocab"]


def _fake_bench(out: Path, scores: dict[str, dict[str, list[float]]], protocol="fixed"):
    tasks = [{"name": "bc5-chem", "family": "ner", "task": "ner", "data": "bc5-chem"},
             {"name": "ddi", "family": "re", "task": "re", "data": "ddi"}]
    out.mkdir(parents=True)
    (out / "bench.json").write_text(json.dumps({
        "suite": {"name": "mini", "tasks": tasks}, "budget": "full", "protocol": protocol,
        "encoders": {e: {"model": f"/m/{e}", "fingerprint": e} for e in scores}}))
    for enc, per_task in scores.items():
        for task, values in per_task.items():
            for seed, v in enumerate(values, 1):
                f = out / "stages" / enc / task / f"seed-{seed}.json"
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(json.dumps({"encoder": enc, "task": task, "seed": seed, "score": v,
                                         "metric": "micro_f1", "task_kind": "re",
                                         "overrides": {}, "run": str(out / "none"),
                                         "test": {"micro_f1": v / 100}}))


def test_merge_reads_the_bench_folder(rp, tmp_path, monkeypatch):
    monkeypatch.delenv("BERTKIT_DATA", raising=False)  # no contamination files to count
    bench = tmp_path / "bench"
    _fake_bench(bench, {"G": {"bc5-chem": [60.0, 61.0, 62.0], "ddi": [50.0, 51.0, 52.0]},
                        "S": {"bc5-chem": [70.0, 71.0, 72.0]}})
    text = rp.merge(bench)
    assert (bench / "reproduce.md").read_text() == text
    assert "| S | - | 71.00 ± 1.00 | - |" in text  # bc5cdr not run, bc5-chem run
    assert "| 1. SciBERT beyond BC5CDR: S vs G | bc5-chem | 71.00 ± 1.00 | 61.00 ± 1.00 | " \
        "+10.00 | 0.00 |" in text
    assert "| 1. SciBERT beyond BC5CDR: S vs G | jnlpba | - | - | - | - | - | not measured yet |" \
        in text
    assert "| 1. DAPT on DDI and HoC: G+D vs G+G | ddi | - | - | - | - | - | not measured yet |" \
        in text
    devgrid = tmp_path / "grid"
    _fake_bench(devgrid, {"G": {"chemprot": [50.0, 51.0, 52.0]},
                          "S": {"chemprot": [45.0, 46.0, 47.0]}}, "dev-grid")
    assert "| 3. S vs G under dev-grid | chemprot | 46.00 ± 1.00 | 51.00 ± 1.00 | -5.00 |" \
        in rp.merge(bench, devgrid)


def test_run_stage_stops_at_the_time_limit_and_records_it(rp, tmp_path):
    """A command past --max-minutes is stopped (SIGTERM) and the stage is not finished (the
    next call runs it again, where bertkit continues); a command that makes the stage's product
    finishes it; each call leaves STAGE.json with its commands and load."""
    done = tmp_path / "w" / "model" / "config.json"
    slow = rp.Stage("pretrain-X", [["{python}", "-c", "import time; time.sleep(60)"]], [], 1.0,
                    done)
    assert rp.run_stage(slow, {}, tmp_path / "w", 0.01, tmp_path / "log") is False
    record = json.loads((tmp_path / "log" / "pretrain-X.json").read_text())
    assert record["stopped"] == "SIGTERM after 0.01 minutes" and record["finished"] is False
    assert record["wall_minutes"] < 0.5 and "load_1m" in record["load_before"]
    make = rp.Stage("pretrain-X", [["{python}", "-c", ("import pathlib, sys; p = pathlib.Path("
                                    "sys.argv[1]); p.parent.mkdir(parents=True); p.touch()"),
                                    "{work}/model/config.json"]], [], 1.0, done)
    assert rp.run_stage(make, {}, tmp_path / "w", None, tmp_path / "log") is True
    assert rp.finished(make) and json.loads(
        (tmp_path / "log" / "pretrain-X.json").read_text())["finished"] is True


def test_merge_shows_contamination_as_a_table_and_leaves_bc2gm_unjudged(rp, tmp_path,
                                                                        monkeypatch):
    """Review: reproduce.md printed the counts as raw Python dicts; BC2GM's rows carried a
    verdict although S and G+D saw its test sentences."""
    lines = rp.contamination_table(
        {"S": {"bc2gm": {"found": 4864, "of": 4939, "corpora": ["/d/corpus/train.txt"]},
               "ddi": {"found": 0, "of": 3888, "corpora": ["/d/corpus/train.txt"]}}},
        ["ddi", "bc2gm"])
    assert "| S | corpus/train.txt | 0 / 3,888 | **4,864 / 4,939** |" in lines
    monkeypatch.delenv("BERTKIT_DATA", raising=False)
    bench = tmp_path / "bench"
    _fake_bench(bench, {"G": {"bc2gm": [60.0, 61.0, 62.0]}, "S": {"bc2gm": [70.0, 71.0, 72.0]}})
    row = next(x for x in rp.question_rows(bench) if "| bc2gm |" in x and "S vs G" in x)
    assert "not judged: 4,864 of BC2GM's 4,939 test sentences" in row and "(bench: better" in row
