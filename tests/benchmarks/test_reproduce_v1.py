"""benchmarks/reproduce_v1.py (issue 27, phase 2; superseded by reproduce.py, issue 43): the plan's stages, dependencies and budgets, the
command lines against the real CLI (typer's click objects), and the merge's statistics and goal
verdicts on fabricated stage JSONs. No training."""

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
    spec = importlib.util.spec_from_file_location("benchmark_reproduce", BENCHMARKS / "reproduce_v1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def plan(rp):
    return rp.build_plan(Path("/w"), optional=True, data=Path("/d"),
                         recipe_lr={"ner": 1e-4})


def test_plan_has_every_encoder_and_stage(rp, plan):
    for enc in ("R", "G", "S", "G+D", "G+G", "S-span", "GvS"):
        assert f"pretrain-{enc}" in plan and f"intrinsic-{enc}" in plan
    # the from-scratch encoders pretrain in two phases (64, then 128 positions)
    assert [n for n in plan if n.endswith("-seq64")] == [
        "pretrain-G-seq64", "pretrain-S-seq64", "pretrain-S-span-seq64", "pretrain-GvS-seq64"]
    assert "pretrain-G+T" not in plan  # TAPT is per task, in its fine-tuning stage
    for enc in ("R", "G", "S", "G+D", "G+G", "G+T", "S-span", "GvS"):
        for task in ("ner", "re", "cls", "qa"):
            assert f"finetune-{enc}-{task}" in plan
    # ner's rate is given (recipe_lr): the dev choice is made for re, cls and qa only
    assert [n for n in plan if n.startswith("recipe-")] == ["recipe-re", "recipe-cls", "recipe-qa"]
    assert len(plan) == 2 + 7 + 4 + 7 + 3 + 8 * 4
    assert "finetune-G-qa" not in rp.build_plan(Path("/w"), data=Path("/d"))


def test_dependencies_come_first_and_are_right(plan):
    order = list(plan)
    for name, stage in plan.items():
        for dep in stage.deps:
            assert order.index(dep) < order.index(name)
    assert plan["pretrain-G-seq64"].deps == ["vocab-general"]
    assert plan["pretrain-G"].deps == ["pretrain-G-seq64"]
    assert plan["pretrain-S-seq64"].deps == plan["pretrain-R"].deps == ["vocab-scientific"]
    assert plan["pretrain-S"].deps == ["pretrain-S-seq64"]
    assert plan["pretrain-GvS-seq64"].deps == ["vocab-general"]
    assert plan["pretrain-G+D"].deps == plan["pretrain-G+G"].deps == ["pretrain-G"]
    assert plan["finetune-G+T-re"].deps == ["pretrain-G", "recipe-re"]
    assert plan["finetune-G+T-ner"].deps == ["pretrain-G"]  # ner's rate was given
    assert plan["finetune-S-span-cls"].deps == ["pretrain-S-span", "recipe-cls"]
    assert plan["recipe-re"].deps == ["pretrain-G"]
    assert plan["intrinsic-G+D"].deps == ["pretrain-G+D"]


def _opt(cmd, flag):
    return cmd[cmd.index(flag) + 1]


def test_identical_pretraining_budgets_and_recipe(plan):
    names = ("G", "S", "S-span", "GvS")
    short = [plan[f"pretrain-{e}-seq64"].commands[0] for e in names]  # phase A, from scratch
    long = [plan[f"pretrain-{e}"].commands[0] for e in names]  # phase B, continued at 128
    assert {_opt(c, "--max-tokens") for c in short} == {"26624000"}  # 6,500 steps of 64 x 64
    assert {_opt(c, "--max-tokens") for c in long} == {"10376000"}
    for e in names:
        assert plan[f"pretrain-{e}-seq64"].info["tokens"] + plan[f"pretrain-{e}"].info["tokens"] \
            == 37_000_000
        assert _opt(plan[f"pretrain-{e}"].commands[0], "--model") == \
            f"/w/pretrain/{e}-seq64/model"
    assert plan["pretrain-G+D"].info["tokens"] == plan["pretrain-G+G"].info["tokens"] == 12_333_333
    for cmd in short:
        assert _opt(cmd, "--config") == "layers=2,hidden=128"
        assert (_opt(cmd, "--max-seq-length"), _opt(cmd, "--batch-size")) == ("64", "64")
        assert (_opt(cmd, "--lr"), _opt(cmd, "--warmup"), _opt(cmd, "--lr-schedule")) == \
            ("0.001", "100", "constant")
    for cmd in long + [plan["pretrain-G+D"].commands[0]]:
        assert (_opt(cmd, "--max-seq-length"), _opt(cmd, "--batch-size")) == ("128", "32")
        assert (_opt(cmd, "--lr"), _opt(cmd, "--warmup"), _opt(cmd, "--lr-schedule")) == \
            ("0.001", "100", "linear")
    for cmd in short + long:
        assert (_opt(cmd, "--mask-prob"), _opt(cmd, "--valid-mask-prob")) == ("0.3", "0.15")
        assert (_opt(cmd, "--dropout"), _opt(cmd, "--precision")) == ("0", "fp32")
        assert _opt(cmd, "--valid") == _opt(cmd, "--corpus")  # each on its own held-out text

    # the settings other than corpus, vocabulary, masking and output are the same for all
    def core(cmd):
        drop = {"--vocab", "--corpus", "--valid", "--masking", "--model", "-o"}
        return [a for i, a in enumerate(cmd) if a not in drop and cmd[i - 1] not in drop
                and a != "--sbo"]
    assert core(short[0]) == core(short[1]) == core(short[2]) == core(short[3])
    assert core(long[0]) == core(long[1]) == core(long[2]) == core(long[3])
    assert _opt(plan["pretrain-G-seq64"].commands[0], "--vocab").endswith("vocab-general-8000")
    assert _opt(plan["pretrain-S"].commands[0], "--corpus") == "scientific"
    assert _opt(plan["pretrain-GvS"].commands[0], "--corpus") == "scientific"
    for span in (plan["pretrain-S-span-seq64"].commands[0], plan["pretrain-S-span"].commands[0]):
        assert _opt(span, "--masking") == "span" and "--sbo" in span
    assert _opt(plan["pretrain-S"].commands[0], "--masking") == "token"
    d, g = plan["pretrain-G+D"].commands[0], plan["pretrain-G+G"].commands[0]
    assert _opt(d, "--model") == _opt(g, "--model") == "/w/pretrain/G/model"
    assert (_opt(d, "--corpus"), _opt(g, "--corpus")) == ("scientific", "general")
    assert _opt(d, "--max-tokens") == _opt(g, "--max-tokens") == "12333333"
    r = plan["pretrain-R"].commands[0]
    assert "--max-tokens" not in r and _opt(r, "--max-steps") == "1" and _opt(r, "--lr") == "1e-12"


def test_token_budget_options(rp):
    plan = rp.build_plan(Path("/w"), tokens=1000, continue_tokens=500, data=Path("/d"))
    assert _opt(plan["pretrain-S-seq64"].commands[0], "--max-tokens") == "720"  # 72%
    assert _opt(plan["pretrain-S"].commands[0], "--max-tokens") == "280"
    assert _opt(plan["pretrain-G+D"].commands[0], "--max-tokens") == "500"
    assert _opt(plan["pretrain-G+G"].commands[0], "--max-tokens") == "500"
    default = rp.build_plan(Path("/w"), tokens=3000, data=Path("/d"))
    assert _opt(default["pretrain-G+D"].commands[0], "--max-tokens") == "1000"  # tokens // 3


def test_finetune_and_tapt_commands(rp, plan):
    ner = plan["finetune-S-ner"].commands[0]
    assert ner[3:5] == ["finetune", "ner"] and _opt(ner, "--data") == "bc5cdr"
    assert _opt(ner, "--seeds") == "1,2,3" and _opt(ner, "--lr") == "0.0001"
    assert _opt(ner, "--model") == "/w/pretrain/S/model" and _opt(ner, "--max-length") == "128"
    re_ = plan["finetune-G-re"].commands[0]
    assert _opt(re_, "--data") == "chemprot" and _opt(re_, "--lr") == "{lr:re}"  # dev choice
    grid = plan["recipe-re"].commands
    assert [_opt(c, "--lr") for c in grid] == [f"{lr:g}" for lr in rp.LR_GRID]
    assert all(_opt(c, "--model") == "/w/pretrain/G/model" and _opt(c, "--seeds") == "1"
               and _opt(c, "--data") == "chemprot" for c in grid)
    assert _opt(plan["finetune-G-cls"].commands[0], "--data") == "scicite"
    tapt = plan["finetune-G+T-ner"].commands[0]
    assert tapt[3] == "adapt" and _opt(tapt, "--task-text") == "task"
    assert _opt(tapt, "--model") == "/w/pretrain/G/model" and _opt(tapt, "--seeds") == "1,2,3"
    assert _opt(tapt, "--lr") == "0.0001" and _opt(tapt, "--masking") == "token"
    intrinsic = plan["intrinsic-S"].commands
    assert [_opt(c, "--valid") for c in intrinsic] == ["/d/corpus/valid.txt",
                                                         "/d/corpus-general/valid.txt"]


def test_every_option_exists_in_the_cli(plan):
    import typer

    from bertkit.cli import app

    root = typer.main.get_command(app)
    for stage in plan.values():
        for cmd in stage.commands:
            assert cmd[:3] == ["{python}", "-m", "bertkit"]
            command, args = root, cmd[3:]
            while hasattr(command, "commands") and args and args[0] in command.commands:
                command, args = command.commands[args[0]], args[1:]
            assert not hasattr(command, "commands"), f"{stage.name}: no such command"
            known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
            flags = [a for a in args if a.startswith("-") and not a[1:2].isdigit()]
            missing = [f for f in flags if f not in known]
            assert not missing, f"{stage.name}: {missing} not options of {cmd[3:5]}"


def _ft(enc, task, values, lr=None):
    return {"stage": f"finetune-{enc}-{task}", "finished": True, "task": task, "lr": lr,
            "test": {"mean": round(sum(values) / len(values), 2),
                     "sd": round(__import__("statistics").stdev(values), 2), "values": values}}


def _write(folder, records):
    folder.mkdir(parents=True, exist_ok=True)
    for r in records:
        (folder / f"{r['stage']}.json").write_text(json.dumps(r))


def test_points_mean_and_sample_sd(rp):
    summary = {"metrics": {"test": {"f1": {"values": [0.80, 0.82, 0.84]}}}}
    p = rp._points(summary, "f1", "test")
    assert p == {"mean": 82.0, "sd": 2.0, "values": [80.0, 82.0, 84.0]}
    assert rp._points(summary, "f1", "dev") is None


def test_merge_tables_and_verdicts(rp, tmp_path):
    base = {"ner": 70.0, "re": 50.0, "cls": 70.0}
    recs = []
    for task, b in base.items():
        lr = 1e-4 if task == "ner" else None
        recs.append(_ft("R", task, [b - 30, b - 29, b - 31], lr=lr))
        recs.append(_ft("G", task, [b, b + 0.5, b - 0.5], lr=lr))
        recs.append(_ft("S", task, [b + 3, b + 3.5, b + 2.5]))  # +3, outside spreads
        recs.append(_ft("G+G", task, [b, b + 0.2, b - 0.2]))
        recs.append(_ft("G+T", task, [b + 1, b + 1, b + 1]))
        recs.append(_ft("S-span", task, [b + 3, b + 4, b + 2]))
    # DAPT: +2 outside on ner only, +2 inside a wide spread on re, +0.5 on cls: not met
    recs += [_ft("G+D", "ner", [72.0, 72.2, 71.8]), _ft("G+D", "re", [49.0, 52.0, 55.0]),
             _ft("G+D", "cls", [70.5, 70.5, 70.5])]
    recs += [{"stage": "intrinsic-S", "finished": True,
              "scientific": {"loss": 3.5, "accuracy": 0.38, "perplexity": 33.1},
              "general": {"loss": 5.0, "accuracy": 0.2, "perplexity": 148.4}},
             {"stage": "intrinsic-G", "finished": True,
              "scientific": {"loss": 4.0, "accuracy": 0.33, "perplexity": 54.6}},
             {"stage": "pretrain-S", "finished": True, "train_tokens": 37_000_000}]
    _write(tmp_path / "r", recs)
    text = rp.merge(tmp_path / "r", tmp_path / "out.md", optional=False)
    assert (tmp_path / "out.md").read_text() == text
    assert "| G | 70.00 ± 0.50 | 50.00 ± 0.50 | 70.00 ± 0.50 |" in text
    assert "| S | 73.00 ± 0.50 |" in text
    assert "ner 0.0001" in text and "re not chosen yet" in text
    assert "not at G's rate: finetune-G+D-ner, finetune-G+G-ner" in text  # fabricated at None
    assert "| S | 3.500 (33, 38.0%) | 5.000 (148, 20.0%) | 37.0 M |" in text
    assert "| G | 4.000 (55, 33.0%) | - | - |" in text
    verdicts = {g.split(":")[0]: v for g, v, _ in rp.goals(rp._load(tmp_path / "r"))}
    assert verdicts == {"Pretraining works": "met", "SciBERT": "met", "DAPT": "not met",
                        "SpanBERT": "reported"}
    assert "scientific valid MLM loss S 3.500 vs G 4.000" in text


def test_verdicts_not_measured_yet_and_not_met(rp, tmp_path):
    # only G and S on ner: SciBERT's claim cannot be decided yet; R missing everywhere
    _write(tmp_path / "a", [_ft("G", "ner", [70.0, 70.5, 69.5]), _ft("S", "ner", [73.0, 73.5, 72.5])])
    verdicts = {g.split(":")[0]: v for g, v, _ in rp.goals(rp._load(tmp_path / "a"))}
    assert verdicts == {"Pretraining works": "not measured yet", "SciBERT": "not measured yet",
                        "DAPT": "not measured yet", "SpanBERT": "not measured yet"}
    # S +3 on ner but inside G's wide spread: not met even before ChemProt is measured
    _write(tmp_path / "b", [_ft("G", "ner", [66.0, 70.0, 74.0]), _ft("S", "ner", [73.0, 73.5, 72.5]),
                            _ft("R", "ner", [65.0, 65.5, 64.5])])
    verdicts = {g.split(":")[0]: v for g, v, _ in rp.goals(rp._load(tmp_path / "b"))}
    assert verdicts["SciBERT"] == "not met"
    assert verdicts["Pretraining works"] == "not met"  # G +5 on BC5CDR, not 10
    # an unfinished stage counts as not measured
    rec = _ft("G", "ner", [70.0, 70.5, 69.5])
    rec["finished"] = False
    assert rp.score({"finetune-G-ner": rec}, "G", "ner") is None


def test_beats_and_outside(rp):
    a, b = {"mean": 72.0, "sd": 0.5}, {"mean": 70.0, "sd": 0.5}
    assert rp.beats(a, b, 1.0) is True and rp.beats(a, b, 2.5) is False
    assert rp.beats(b, a, 1.0) is False and rp.beats(a, None, 1.0) is None
    assert rp.outside(a, b) and not rp.outside(a, {"mean": 70.0, "sd": 1.6})


def test_run_resumes_a_stopped_pretraining_and_skips_finished_dependencies(rp, tmp_path, monkeypatch):
    monkeypatch.setattr(rp, "RESULTS", tmp_path / "results")
    work = tmp_path / "work"
    plan = rp.build_plan(work, data=Path("/d"))
    vocab = plan["vocab-scientific"]
    vocab.output.parent.mkdir(parents=True)
    vocab.output.write_text("[PAD]\n[UNK]\n")
    rp._write("vocab-scientific", {"stage": "vocab-scientific", "finished": True})
    run = work / "pretrain" / "S-seq64"
    (run / "checkpoints").mkdir(parents=True)  # stopped: a checkpoint, no results.json
    (run / "environment.json").write_text("{}")
    (run / "metrics.jsonl").write_text(json.dumps(
        {"type": "eval", "step": 100, "train_tokens": 409600, "train_seconds": 60.0,
         "time_s": 61.0, "loss": 7.5, "accuracy": 0.12}) + "\n")
    calls = []

    def fake(cmd, max_minutes, log, cache=None):
        calls.append(cmd)
        return "SIGTERM after 5 minutes"

    monkeypatch.setattr(rp, "_run_command", fake)
    assert rp.run_stage(plan["pretrain-S"], plan, work, 5) is False  # waits for phase A
    assert len(calls) == 1  # the finished vocabulary was not built again
    assert "--resume" in calls[0] and "--overwrite" not in calls[0]
    assert _opt(calls[0], "-o") == str(run) and not rp.finished(plan["pretrain-S"])
    result = json.loads((tmp_path / "results" / "pretrain-S-seq64.json").read_text())
    assert result["finished"] is False and result["stopped"] == "SIGTERM after 5 minutes"
    assert result["points"] == [{"step": 100, "tokens": 409600, "seconds": 60.0, "loss": 7.5,
                                 "accuracy": 0.12}]
    assert not rp.finished(plan["pretrain-S-seq64"]) and rp.finished(vocab)
    # a dependant waits: the stopped pretraining runs again first (still stopped here)
    calls.clear()
    assert rp.run_stage(plan["finetune-S-ner"], plan, work, 5) is False
    assert len(calls) == 1 and calls[0][3] == "pretrain" and _opt(calls[0], "-o") == str(run)


def _plan_with_general_vocab(rp, tmp_path, monkeypatch):
    """A plan under tmp_path whose results go there, with vocab-general finished and on disk."""
    monkeypatch.setattr(rp, "RESULTS", tmp_path / "results")
    work = tmp_path / "work"
    plan = rp.build_plan(work, data=Path("/d"))
    rp._write("vocab-general", {"stage": "vocab-general", "finished": True})
    plan["vocab-general"].output.parent.mkdir(parents=True)
    plan["vocab-general"].output.write_text("[PAD]\n")
    return work, plan


def test_run_adopts_a_finished_run_through_resume(rp, tmp_path, monkeypatch):
    """A finished run directory without its stage JSON (a run made by hand, or a JSON lost) is
    run with --resume, not --overwrite: bertkit refuses other settings and, for the same ones,
    writes nothing and exits 0; the stage then reads the run's curve."""
    work, plan = _plan_with_general_vocab(rp, tmp_path, monkeypatch)
    run = work / "pretrain" / "G-seq64"
    run.mkdir(parents=True)
    (run / "environment.json").write_text("{}")
    (run / "metrics.jsonl").write_text(json.dumps(
        {"type": "eval", "step": 6500, "train_tokens": 26_624_000, "train_seconds": 4000.0,
         "time_s": 4100.0, "loss": 4.06, "accuracy": 0.305}) + "\n")
    (run / "results.json").write_text(json.dumps({"train_tokens": 26_623_616}))
    calls = []
    monkeypatch.setattr(rp, "_run_command", lambda cmd, *a, **k: calls.append(cmd))
    assert rp.run_stage(plan["pretrain-G-seq64"], plan, work, None) is True
    assert len(calls) == 1 and "--resume" in calls[0] and "--overwrite" not in calls[0]
    result = json.loads((tmp_path / "results" / "pretrain-G-seq64.json").read_text())
    assert result["train_tokens"] == 26_623_616 and result["points"][-1]["accuracy"] == 0.305


def _recipe_summary(path, dev):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"metrics": {"dev": {"micro_f1": {"values": [dev]}},
                                            "test": {"micro_f1": {"values": [0.99]}}}}))


def test_recipe_stage_chooses_on_dev_and_fine_tuning_reads_the_choice(rp, tmp_path, monkeypatch):
    monkeypatch.setattr(rp, "RESULTS", tmp_path / "results")
    work = tmp_path / "work"
    plan = rp.build_plan(work, data=Path("/d"))
    rp._write("pretrain-G", {"stage": "pretrain-G", "finished": True})
    rp._write("pretrain-S", {"stage": "pretrain-S", "finished": True})
    for dep in ("G", "S"):  # the encoders' folders exist: no rebuild
        rp.model_dir(work, dep).mkdir(parents=True)
    dev = dict(zip(rp.LR_GRID, [0.30, 0.42, 0.47, 0.45, 0.40]))  # 3e-4 is best on dev
    calls = []

    def fake(cmd, max_minutes, log, cache=None):
        calls.append(cmd)
        out = Path(cmd[cmd.index("-o") + 1])
        if cmd[4] == "re" and "recipe" in str(out):
            _recipe_summary(out / "summary.json", dev[float(_opt(cmd, "--lr"))])
        else:
            _recipe_summary(out / "summary.json", 0.5)
        return None

    monkeypatch.setattr(rp, "_run_command", fake)
    with pytest.raises(SystemExit, match="recipe-re has not finished"):
        rp.resolve(plan["finetune-S-re"].commands[0])
    assert rp.run_stage(plan["finetune-S-re"], plan, work, None) is True
    assert len(calls) == len(rp.LR_GRID) + 1  # the grid on G first, then S at the choice
    recipe = json.loads((tmp_path / "results" / "recipe-re.json").read_text())
    assert recipe["chosen_lr"] == 3e-4 and "test" not in json.dumps(recipe["results"])
    assert [g["dev"]["mean"] for g in recipe["results"]] == [30.0, 42.0, 47.0, 45.0, 40.0]
    assert _opt(calls[-1], "--lr") == "0.0003" and _opt(calls[-1], "--model").endswith("S/model")
    result = json.loads((tmp_path / "results" / "finetune-S-re.json").read_text())
    assert result["lr"] == 3e-4 and result["commands"][0].count("--lr 0.0003") == 1
    text = rp.merge(tmp_path / "results", tmp_path / "out.md", optional=False)
    assert "| ChemProt RE | 30.00 | 42.00 | 47.00 * | 45.00 |" in text
    assert "At the edge of the grid" not in text  # 3e-4 is inside it


def test_sensitivity_grid_runs_the_recipe_grid_on_another_encoder_and_chooses_nothing(
        rp, tmp_path, monkeypatch):
    """grid-S-re: the recipe's grid on S (dev only); merge shows each encoder's dev score per
    rate with G's choice (*) and the encoder's own best (+), and the fine-tuning stages keep
    G's choice."""
    monkeypatch.setattr(rp, "RESULTS", tmp_path / "results")
    work = tmp_path / "work"
    assert not any(n.startswith("grid-") for n in rp.build_plan(work, data=Path("/d")))
    plan = rp.build_plan(work, data=Path("/d"), sensitivity=True)
    assert {"grid-S-re", "grid-R-ner", "grid-S-span-cls", "grid-G+D-re"} <= set(plan)
    assert "grid-G-re" not in plan and "grid-G+T-re" not in plan  # G's grid is recipe-re
    assert plan["grid-S-re"].deps == ["pretrain-S"]
    for enc in ("G", "S"):
        rp._write(f"pretrain-{enc}", {"stage": f"pretrain-{enc}", "finished": True})
        rp.model_dir(work, enc).mkdir(parents=True)
    dev = {"G": [0.30, 0.42, 0.47, 0.45, 0.40], "S": [0.30, 0.35, 0.40, 0.55, 0.50]}

    def fake(cmd, max_minutes, log, cache=None):
        out = Path(cmd[cmd.index("-o") + 1])
        enc = "S" if _opt(cmd, "--model").endswith("/S/model") else "G"
        _recipe_summary(out / "summary.json",
                        dict(zip(rp.LR_GRID, dev[enc]))[float(_opt(cmd, "--lr"))])
        return None

    monkeypatch.setattr(rp, "_run_command", fake)
    assert rp.run_stage(plan["grid-S-re"], plan, work, None) is True
    grid = json.loads((tmp_path / "results" / "grid-S-re.json").read_text())
    assert grid["best_lr"] == 1e-3 and "chosen_lr" not in grid
    assert [g["dev"]["mean"] for g in grid["results"]] == [30.0, 35.0, 40.0, 55.0, 50.0]
    assert not (tmp_path / "results" / "recipe-re.json").exists()  # S's grid needs no choice
    assert rp.run_stage(plan["recipe-re"], plan, work, None) is True
    assert rp.chosen_lr("re") == 3e-4  # G's choice is unchanged by S's grid
    text = rp.merge(tmp_path / "results", tmp_path / "out.md", optional=False)
    assert "| ChemProt RE | G | 30.00 | 42.00 | 47.00 * + | 45.00 | 40.00 | 0.00 |" in text
    assert "| ChemProt RE | S | 30.00 | 35.00 | 40.00 * | 55.00 + | 50.00 | 15.00 |" in text


def test_a_rebuilt_pretraining_records_whether_it_is_the_same_encoder(rp, tmp_path, monkeypatch):
    work, plan = _plan_with_general_vocab(rp, tmp_path, monkeypatch)
    point = {"step": 100, "tokens": 409600, "seconds": 60.0, "loss": 4.25, "accuracy": 0.3}
    rp._write("pretrain-G-seq64", {"stage": "pretrain-G-seq64", "finished": True})
    plan["pretrain-G-seq64"].output.mkdir(parents=True)  # phase A's model is there
    rp._write("pretrain-G", {"stage": "pretrain-G", "finished": True, "points": [point]})
    run = work / "pretrain" / "G"

    def fake(loss):
        def run_it(cmd, max_minutes, log, cache=None):
            run.mkdir(parents=True, exist_ok=True)
            (run / "environment.json").write_text("{}")
            (run / "metrics.jsonl").write_text(json.dumps(
                {"type": "eval", "step": 100, "train_tokens": 409600, "train_seconds": 60.0,
                 "time_s": 61.0, "loss": loss, "accuracy": 0.3}) + "\n")
            (run / "results.json").write_text(json.dumps({"train_tokens": 409600}))
            return None
        return run_it

    for loss, same in ((4.25, True), (4.5, False)):
        monkeypatch.setattr(rp, "_run_command", fake(loss))
        assert rp.run_stage(plan["pretrain-G"], plan, work, None) is True
        result = json.loads((tmp_path / "results" / "pretrain-G.json").read_text())
        assert result["rebuild"] == {"recorded_final_loss": 4.25, "final_loss": loss, "same": same}
        rp._write("pretrain-G", {"stage": "pretrain-G", "finished": True, "points": [point]})


def test_mini_scibert_recipe_is_encoder_s(rp, plan):
    """`bertkit run mini-scibert` (the issue's user-facing recipe) pretrains with exactly the
    flags of reproduce.py's S encoder, phase by phase: same vocabulary size, architecture and
    recipe at 64 positions, then the same continuation at 128."""
    from bertkit.workflows import recipes

    stages = {s.name: s.settings for s in recipes.load(recipes.find("mini-scibert")).stages}
    assert list(stages) == ["vocab", "seq64", "seq128"]
    assert stages["vocab"]["size"] == rp.CONFIGS[rp.RECIPE]["vocab_size"]
    assert stages["seq128"]["model"] == "@seq64"
    checked = 0
    for phase, stage in (("seq64", "pretrain-S-seq64"), ("seq128", "pretrain-S")):
        cmd = plan[stage].commands[0]
        for key, value in stages[phase].items():
            if key in ("corpus", "valid", "vocab", "model", "eval_steps", "save_steps"):
                continue  # paths, and how often it evaluates and saves
            flag = f"--{key.replace('_', '-')}"
            expected = f"{value:g}" if isinstance(value, float) else str(value)
            assert flag in cmd and _opt(cmd, flag) == expected, (stage, flag, expected)
            checked += 1
    assert checked == 13 + 12  # phase B: no --config (it continues phase A's model)


def test_tapt_stage_continues_with_the_recipe_and_fine_tunes_at_128(rp, plan, tmp_path):
    """G+T's adapt command reads two recipe files that run_stage writes: TAPT with G's phase-B
    recipe (30% masking, warm-up 100, linear decay, no dropout) and fine-tuning at 128
    positions, as every other encoder; both build adapt's stage configs."""
    from bertkit.workflows.adapt import AdaptConfig, finetune_config, pretrain_config

    stage = plan["finetune-G+T-re"]
    cmd = stage.commands[0]
    files = {}
    for key, text in stage.info["files"].items():
        files[Path(key).name] = tmp_path / Path(key).name
        files[Path(key).name].write_text(text)
    assert Path(_opt(cmd, "--pretrain-recipe")).name == "tapt-pretrain.yaml"
    assert Path(_opt(cmd, "--finetune-recipe")).name == "tapt-re.yaml"
    cfg = AdaptConfig(task="re", data="chemprot", model="/m", task_text="task",
                      pretrain_recipe=str(files["tapt-pretrain.yaml"]),
                      finetune_recipe=str(files["tapt-re.yaml"]), pretrain_lr=1e-3, lr=3e-4)
    pt = pretrain_config(cfg, "/m", "/t.txt", tmp_path / "pt", steps=380)
    assert (pt.mask_prob, pt.valid_mask_prob, pt.warmup, pt.lr_schedule, pt.dropout) == (
        0.3, 0.15, 100, "linear", 0.0)  # phase B's (a continuation, as G+D and G+G)
    assert (pt.lr, pt.batch_size, pt.max_seq_length, pt.max_steps) == (1e-3, 32, 128, 380)
    ft = finetune_config(cfg, "/m", tmp_path / "ft", seed=1)
    assert (ft.max_length, ft.lr) == (128, 3e-4)


def test_scibert_verdict_is_not_shown_when_g_is_on_the_plateau(rp, tmp_path):
    """S beating an encoder that never left the plateau is not evidence for the domain."""
    recs = [_ft("G", "ner", [50.0, 50.5, 49.5]), _ft("S", "ner", [70.0, 70.5, 69.5]),
            _ft("G", "re", [30.0, 30.5, 29.5]), _ft("S", "re", [45.0, 45.5, 44.5]),
            {"stage": "intrinsic-G", "finished": True,
             "general": {"loss": 6.09, "accuracy": 0.139, "perplexity": 441.9}}]
    _write(tmp_path / "p", recs)
    found = {g.split(":")[0]: (v, e) for g, v, e in rp.goals(rp._load(tmp_path / "p"))}
    assert found["SciBERT"][0] == "not shown: G did not leave the plateau"
    assert "own corpus 13.9%" in found["SciBERT"][1]
    recs[3] = _ft("S", "re", [30.0, 30.5, 29.5])  # "not met" against a plateau G: not shown either
    _write(tmp_path / "n", recs)
    found = {g.split(":")[0]: v for g, v, _ in rp.goals(rp._load(tmp_path / "n"))}
    assert found["SciBERT"] == "not shown: G did not leave the plateau"
    recs[3] = _ft("S", "re", [45.0, 45.5, 44.5])
    recs[-1]["general"]["accuracy"] = 0.35  # a trained G: the comparison counts
    _write(tmp_path / "q", recs)
    assert {g.split(":")[0]: v for g, v, _ in rp.goals(rp._load(tmp_path / "q"))}["SciBERT"] == "met"


def test_merge_shows_both_pretraining_phases(rp, tmp_path):
    """A two-phase encoder has a curve row per phase (the crossings counted in each phase's own
    tokens) and its intrinsic row counts the tokens of both; a continued encoder has one row."""
    def pre(stage, valid, points):
        return {"stage": stage, "finished": True, "train_tokens": points[-1][0],
                "commands": [f"python -m bertkit pretrain --valid {valid} -o x"],
                "points": [{"step": i, "tokens": t, "seconds": 1.0, "loss": 5.0, "accuracy": a}
                           for i, (t, a) in enumerate(points)]}
    _write(tmp_path / "r", [
        pre("pretrain-G-seq64", "general", [(10e6, 0.12), (20e6, 0.28), (26.6e6, 0.305)]),
        pre("pretrain-G", "general", [(1e6, 0.21), (10.4e6, 0.36)]),
        pre("pretrain-G+D", "scientific", [(12.3e6, 0.40)]),
        {"stage": "intrinsic-G", "finished": True,
         "general": {"loss": 3.9, "accuracy": 0.36, "perplexity": 49.4}}])
    text = rp.merge(tmp_path / "r", tmp_path / "out.md", optional=False)
    assert "| G | A: 64 | general | 26.6 M | 30.5% | 15.0 M | not reached |" in text
    assert "| G | B: 128 | general | 10.4 M | 36.0% | 1.0 M | 9.8 M |" in text
    assert "| G+D | 128 | scientific | 12.3 M | 40.0% |" in text
    assert "| G | - | 3.900 (49, 36.0%) | 37.0 M |" in text  # 26.6 M + 10.4 M


def test_results_option_decides_what_is_done_and_plan_survives_a_closed_pipe(tmp_path):
    """A stage is done when --results holds its finished JSON, whatever --work holds: a new
    --results directory plans every stage afresh and merge writes its table there; `plan | head`
    ends without a traceback."""
    import subprocess
    script = [sys.executable, str(BENCHMARKS / "reproduce_v1.py")]
    fresh = subprocess.run([*script, "plan", "--results", str(tmp_path / "r"), "--work", str(tmp_path)],
                           capture_output=True, text=True, check=True).stdout
    assert "(done)  ~" not in fresh and fresh.count("## ") >= 30
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "vocab-general.json").write_text(json.dumps({"finished": True}))
    again = subprocess.run([*script, "plan", "--results", str(tmp_path / "r")],
                           capture_output=True, text=True, check=True).stdout
    assert again.count("(done)  ~") == 1 and "## vocab-general (done)" in again
    subprocess.run([*script, "merge", "--results", str(tmp_path / "r")], capture_output=True, check=True)
    assert (tmp_path / "r" / "reproduce.md").read_text().startswith("# Domain adaptation")
    closed = subprocess.run(f"{sys.executable} {BENCHMARKS / 'reproduce_v1.py'} plan | head -1",
                            shell=True, capture_output=True, text=True)
    assert closed.stdout.startswith("## vocab-general") and "Traceback" not in closed.stderr


def test_the_plan_names_data_files_by_absolute_path(rp, monkeypatch, tmp_path):
    # issue 46: `reproduce.py plan` printed $BERTKIT_DATA as given (data/corpus/valid.txt),
    # which runs only from the folder it was printed in
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BERTKIT_DATA", "data")
    plan = rp.build_plan(Path("/w"))
    paths = [a for s in plan.values() for c in s.commands for a in map(str, c)
             if "valid.txt" in a]
    assert paths and all(a.startswith(str(tmp_path / "data")) for a in paths), paths[:3]


def test_the_printed_plan_names_data_files_under_bertkit_data(rp, monkeypatch, tmp_path, capsys):
    # issue 46: `reproduce.py plan` printed this machine's absolute data folder; with
    # $BERTKIT_DATA set to an absolute folder it prints $BERTKIT_DATA/..., the same from any
    # folder; a relative one still gives absolute paths (the test above)
    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path / "data"))
    rp.print_plan(rp.build_plan(Path("/w")))
    out = capsys.readouterr().out
    assert "--corpus $BERTKIT_DATA/corpus/train.txt " in out
    assert "$BERTKIT_DATA/corpus/valid.txt" in out and str(tmp_path) not in out
    assert rp.render(["{python}", "-m", str(tmp_path / "data" / "a b.txt")], tmp_path / "data") \
        == "python -m $BERTKIT_DATA/'a b.txt'"
    monkeypatch.setenv("BERTKIT_DATA", "data")
    monkeypatch.chdir(tmp_path)
    rp.print_plan(rp.build_plan(Path("/w")))
    assert f"--corpus {tmp_path / 'data' / 'corpus' / 'train.txt'} " in capsys.readouterr().out
