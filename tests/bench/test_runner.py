"""The stage runner over a stand-in fine-tuning command (tests/bench/fake_finetune.py): result
files, kept stages, refusal with the difference, resume, failures, dev-grid, the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bertkit.bench.encoders import resolve_all
from bertkit.bench.report import build, markdown
from bertkit.bench.runner import Runner
from bertkit.bench.suite import load_suite
from bertkit.errors import BertkitError

FAKE = str(Path(__file__).with_name("fake_finetune.py"))
SUITE = """\
name: t
seeds: [1, 2]
grid: {lr: [1.0e-4, 1.0e-3]}
defaults: {epochs: 1, lr: 1.0e-4}
tasks:
  - {name: ner-a, task: ner, data: bc5cdr, metric: entity_f1, family: ner,
     lite: {max_train_samples: 8}}
references:
  - {model: Ref, size: base (110 M), source: paper, scores: {ner-a: 90.0}, suite_score: 90.0}
"""


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """Runner.command runs the stand-in; returns the file its calls are logged to."""
    original = Runner.command
    monkeypatch.setattr(Runner, "command",
                        lambda self, stage: [sys.executable, FAKE, *original(self, stage)[4:]])
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_FINETUNE_LOG", str(log))
    return log


def _suite(tmp_path, text=SUITE):
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return load_suite(path)


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.is_file() else []


def test_every_stage_writes_its_result_and_a_rerun_keeps_them(tmp_path, tiny_encoder, fake):
    suite, out = _suite(tmp_path), tmp_path / "out"
    encoders = resolve_all([f"a={tiny_encoder}", f"b={tiny_encoder}"])
    assert Runner(suite, encoders, out, jobs=2).run() == {"finished": 4, "kept": 0, "failed": 0}
    record = json.loads((out / "stages/a/ner-a/seed-2.json").read_text())
    assert record["score"] == pytest.approx(100 * 2 * 8 / (2 * 8 + 2))  # seed 2: 8 of 10 right
    assert record["settings"]["lr"] == 1e-4 and record["settings"]["seed"] == 2
    assert record["settings"]["model"] == encoders[0].path
    assert record["sources"]["lr"] == "recipe"
    assert not (out / "runs/a/ner-a/seed-2/model").exists()  # weights removed, scores kept
    assert (out / "runs/a/ner-a/seed-2/test_predictions.conll").is_file()
    assert len(_calls(fake)) == 4
    before = {p: p.read_bytes() for p in (out / "stages").rglob("*.json")}
    assert Runner(suite, encoders, out, jobs=1).run() == {"finished": 0, "kept": 4, "failed": 0}
    assert len(_calls(fake)) == 4  # nothing ran again
    assert {p: p.read_bytes() for p in (out / "stages").rglob("*.json")} == before


def test_a_rerun_with_other_settings_is_refused_and_nothing_is_lost(tmp_path, tiny_encoder,
                                                                    fake):
    out = tmp_path / "out"
    encoders = resolve_all([f"a={tiny_encoder}"])
    Runner(_suite(tmp_path), encoders, out).run()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    changed = _suite(tmp_path, SUITE.replace("lr: 1.0e-4}", "lr: 3.0e-4}"))
    with pytest.raises(BertkitError, match=r"finished with other settings: lr: 0.0001 -> 0.0003"):
        Runner(changed, encoders, out).run()
    with pytest.raises(BertkitError, match="budget: 'full' -> 'lite'"):
        Runner(_suite(tmp_path), encoders, out, budget="lite").run()
    other = _suite(tmp_path, SUITE.replace("name: t", "name: other"))
    with pytest.raises(BertkitError, match="suite: 't' -> 'other'"):
        Runner(other, encoders, out).run()
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert len(_calls(fake)) == 2


def test_the_same_encoder_at_another_path_keeps_the_finished_stages(tmp_path, tiny_encoder,
                                                                    fake):
    """Helper trial: a results folder continued from another checkout was refused (the stage
    compared the encoder's absolute path); the encoder is its fingerprint."""
    import shutil

    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out).run()
    elsewhere = shutil.copytree(tiny_encoder, tmp_path / "checkout2" / "a")
    assert Runner(_suite(tmp_path), resolve_all([f"a={elsewhere}"]), out).run() == {
        "finished": 0, "kept": 2, "failed": 0}


@pytest.mark.parametrize("old, new, words", [
    ("max_train_samples: 8}", "max_train_samples: 8, epochz: 1}", "unknown option 'epochz'"),
    ("lr: 1.0e-4}", "lr: fast}", "option 'lr' has the value 'fast'"),
])
def test_a_bad_setting_names_the_suite_line_not_a_temporary_file(tmp_path, tiny_encoder, fake,
                                                                 old, new, words):
    suite, out = _suite(tmp_path, SUITE.replace(old, new)), tmp_path / "out"
    with pytest.raises(BertkitError) as err:
        Runner(suite, resolve_all([f"a={tiny_encoder}"]), out, budget="lite").run()
    assert err.value.file == str(suite.path) and err.value.line == 6
    assert words in err.value.message and "task ner-a" in err.value.message
    assert "tmp" not in err.value.message.replace(str(tmp_path), "")
    assert _calls(fake) == [] and not (out / "stages").exists()


def test_another_encoder_under_a_known_name_is_refused(tmp_path, tiny_encoder, still_encoder,
                                                       fake):
    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out).run()
    with pytest.raises(BertkitError, match="encoder a: .* other weights"):
        Runner(_suite(tmp_path), resolve_all([f"a={still_encoder}"]), out).run()


def test_a_failed_stage_is_named_and_run_again_next_time(tmp_path, tiny_encoder, fake,
                                                         monkeypatch):
    out = tmp_path / "out"
    encoders = resolve_all([f"a={tiny_encoder}"])
    monkeypatch.setenv("FAKE_FINETUNE_FAIL", "2")
    with pytest.raises(BertkitError, match=r"1 stage\(s\) failed: .*seed-2.log: stage "
                                           r"a/ner-a/seed-2 failed \(exit 1\)"):
        Runner(_suite(tmp_path), encoders, out).run()
    assert (out / "stages/a/ner-a/seed-1.json").is_file()
    assert not (out / "stages/a/ner-a/seed-2.json").exists()
    assert "made to fail" in (out / "runs/a/ner-a/seed-2.log").read_text()
    monkeypatch.delenv("FAKE_FINETUNE_FAIL")
    assert Runner(_suite(tmp_path), encoders, out).run() == {"finished": 1, "kept": 1,
                                                             "failed": 0}


def test_resume_continues_a_stopped_stage_from_its_checkpoint(tmp_path, tiny_encoder, fake,
                                                               monkeypatch):
    out = tmp_path / "out"
    encoders = resolve_all([f"a={tiny_encoder}"])
    monkeypatch.setenv("FAKE_FINETUNE_FAIL", "1")  # seed 1 stops after writing config.yaml
    with pytest.raises(BertkitError):
        Runner(_suite(tmp_path), encoders, out).run()
    (out / "runs/a/ner-a/seed-1/checkpoints").mkdir()  # as a stopped fine-tune leaves it
    monkeypatch.delenv("FAKE_FINETUNE_FAIL")
    Runner(_suite(tmp_path), encoders, out, resume=True).run()
    calls = _calls(fake)
    assert [c[-1] for c in calls] == ["--overwrite", "--overwrite", "--resume"]
    assert (out / "stages/a/ner-a/seed-1.json").is_file()


def test_without_resume_a_stopped_stage_starts_again(tmp_path, tiny_encoder, fake, monkeypatch):
    out = tmp_path / "out"
    encoders = resolve_all([f"a={tiny_encoder}"])
    monkeypatch.setenv("FAKE_FINETUNE_FAIL", "1")
    with pytest.raises(BertkitError):
        Runner(_suite(tmp_path), encoders, out).run()
    (out / "runs/a/ner-a/seed-1/checkpoints").mkdir()
    monkeypatch.delenv("FAKE_FINETUNE_FAIL")
    Runner(_suite(tmp_path), encoders, out).run()
    assert [c[-1] for c in _calls(fake)] == ["--overwrite"] * 3


def test_dev_grid_chooses_each_encoders_rate_on_dev(tmp_path, tiny_encoder, fake):
    out = tmp_path / "out"
    runner = Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out,
                    protocol="dev-grid")
    # 2 grid points and seed 2 run; seed 1 at the chosen rate is the grid point's own run
    assert runner.run() == {"finished": 3, "kept": 1, "failed": 0}
    assert len(_calls(fake)) == 3
    assert sorted(p.name for p in (out / "stages/a/ner-a").iterdir()) == [
        "grid-lr0.0001.items.npz", "grid-lr0.0001.json", "grid-lr0.001.items.npz",
        "grid-lr0.001.json", "seed-1.json", "seed-2.items.npz", "seed-2.json"]
    seed = json.loads((out / "stages/a/ner-a/seed-1.json").read_text())
    assert seed["settings"]["lr"] == 1e-3 and seed["overrides"] == {"lr": 1e-3}
    assert seed["kind"] == "seed" and seed["reused"] == "a/ner-a/grid-lr0.001"
    grid = json.loads((out / "stages/a/ner-a/grid-lr0.001.json").read_text())
    assert seed["score"] == grid["score"] and seed["settings"] == grid["settings"]
    assert seed["items"] == "grid-lr0.001.items.npz"  # the grid run's statistics


def test_tasks_runs_part_of_a_suite_and_the_manifest_keeps_all(tmp_path, tiny_encoder, fake):
    two = SUITE.replace("references:", """\
  - {name: ner-b, task: ner, data: ncbi-disease, metric: entity_f1, family: ner}
references:""")
    suite, out = _suite(tmp_path, two), tmp_path / "out"
    encoders = resolve_all([f"a={tiny_encoder}"])
    assert Runner(suite, encoders, out, tasks=suite.only(["ner-b"]).tasks).run() == {
        "finished": 2, "kept": 0, "failed": 0}
    assert sorted(p.name for p in (out / "stages/a").iterdir()) == ["ner-b"]
    manifest = json.loads((out / "bench.json").read_text())
    assert [t["name"] for t in manifest["suite"]["tasks"]] == ["ner-a", "ner-b"]
    part = build(out)
    assert part["encoders"]["a"]["tasks_without_results"] == ["ner-a"]
    assert "| ner-a |" in markdown(part) and "its family and the suite score are partial" \
        in markdown(part)
    assert Runner(suite, encoders, out).run() == {"finished": 2, "kept": 2, "failed": 0}
    with pytest.raises(BertkitError, match="has no task 'ner-c'"):
        suite.only(["ner-c"])


def test_a_task_short_of_the_suites_seeds_makes_the_suite_score_partial(tmp_path, tiny_encoder,
                                                                         fake):
    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out, seeds=[1]).run()
    r = build(out)
    assert r["encoders"]["a"]["tasks_short_of_seeds"] == {"ner-a": 1}
    text = markdown(r)
    assert "ner-a (1 of 2 seeds)" in text and "fewer seeds than the suite's" in text


def test_seeds_computed_in_other_precisions_are_named(tmp_path, tiny_encoder, fake,
                                                      monkeypatch):
    """A suite resumed on a machine with AMX-BF16 (``--precision auto``: bf16) after one
    without (fp32): the stage records keep the precision each run used, the report names the
    task."""
    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out, seeds=[1]).run()
    assert build(out)["mixed_precision"] == {}
    monkeypatch.setenv("FAKE_FINETUNE_BF16", "2")
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out).run()
    stage = json.loads((out / "stages/a/ner-a/seed-2.json").read_text())
    assert stage["precision"] == "bf16" and stage["device"] == "cpu"
    r = build(out)
    assert r["mixed_precision"] == {"ner-a": {"a": {"fp32": 1, "bf16": 1}}}
    assert "ner-a (a: bf16 x1, fp32 x1)" in markdown(r)


def test_the_report_of_a_run(tmp_path, tiny_encoder, still_encoder, fake):
    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}", f"b={still_encoder}"]), out,
           budget="lite").run()
    r = build(out, baseline="a")
    cell = r["encoders"]["b"]["tasks"]["ner-a"]
    assert cell["n"] == 2 and cell["seeds"] == [1, 2]
    assert r["encoders"]["b"]["tasks_short_of_seeds"] == {}
    assert r["encoders"]["a"]["suite_score"] == pytest.approx(cell["mean"])  # one family
    c = r["comparisons"]["b"]["ner-a"]
    assert c["delta"] == 0.0 and c["verdict"] == "none"
    assert c["bootstrap"]["low"] == c["bootstrap"]["high"] == 0.0
    text = markdown(r)
    assert "lite: not comparable with the published numbers" in text
    assert "| Ref [1] | base (110 M) | 90.00 | 90.00 (published, all its tasks) |" in text
    assert "\n[1] paper  \n" in text + "\n"  # the source once, as a note
    with pytest.raises(BertkitError, match="no encoder 'c'"):
        build(out, baseline="c")


def test_a_moved_results_folder_keeps_its_bootstrap_and_a_missing_one_is_said(
        tmp_path, tiny_encoder, still_encoder, fake):
    import shutil

    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}", f"b={still_encoder}"]), out,
           budget="lite").run()
    record = json.loads((out / "stages/a/ner-a/seed-1.json").read_text())
    assert record["run"] == "runs/a/ner-a/seed-1" and record["items"] == "seed-1.items.npz"
    moved = tmp_path / "elsewhere"
    shutil.move(out, moved)
    shutil.rmtree(moved / "runs")  # a committed folder: stages only
    c = build(moved, baseline="a")["comparisons"]["b"]["ner-a"]
    assert c["bootstrap"] is not None and c["verdict"] == "none"
    for items in (moved / "stages").glob("b/*/*.items.npz"):
        items.unlink()  # results from before the statistics were kept, their runs gone
    r = build(moved, baseline="a")
    c = r["comparisons"]["b"]["ner-a"]
    assert c["bootstrap"] is None and c["verdict"] == "none (no bootstrap)"
    assert c["bootstrap_note"] == "test predictions missing for b seed 1, b seed 2"
    assert "No bootstrap on ner-a: test predictions missing for b seed 1, b seed 2." in markdown(r)
    assert "no contamination to count: a, b." in markdown(r)  # neither names a corpus
    manifest = json.loads((moved / "bench.json").read_text())
    del manifest["encoders"]["b"]  # b's stages copied in from another run
    (moved / "bench.json").write_text(json.dumps(manifest))
    r = build(moved, baseline="a")
    assert r["unlisted"] == ["b"] and r["encoders"]["b"]["tasks"]["ner-a"]["n"] == 2
    assert "without a contamination check: b." in markdown(r)


@pytest.mark.slow
def test_a_stage_stopped_from_outside_stops_the_run(tmp_path, tiny_encoder, fake, monkeypatch):
    """Review: a child fine-tune stopped with ``kill -INT`` (exit 130) was counted a failure and
    the runner started the next stage; it now stops, as for its own Ctrl-C."""
    out = tmp_path / "out"
    monkeypatch.setenv("FAKE_FINETUNE_FAIL", "1:130")
    with pytest.raises(BertkitError, match="stopped; .*--resume to continue") as err:
        Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out, jobs=1).run()
    assert err.value.exit_code == 130
    assert len(_calls(fake)) == 1  # seed 2 never started
    assert not list((out / "stages").rglob("*.json"))


def test_ctrl_c_stops_the_children_and_leaves_no_half_written_result(tmp_path, tiny_encoder,
                                                                      fake, monkeypatch):
    import os
    import signal
    import threading

    out = tmp_path / "out"
    monkeypatch.setenv("FAKE_FINETUNE_SLEEP", "30")
    # a test run started in the background by a non-interactive shell inherits SIGINT ignored
    # (Python then installs no KeyboardInterrupt handler): give this test Ctrl-C's usual meaning
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(BertkitError, match="stopped; .*--resume to continue") as err:
            Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out, jobs=2).run()
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert err.value.exit_code == 130
    assert not list((out / "stages").rglob("*.json"))
    assert (out / "runs/a/ner-a/seed-1/config.yaml").is_file()  # started, then stopped
    assert not (out / "runs/a/ner-a/seed-1/results.json").exists()


def test_the_report_names_settings_that_did_not_come_from_the_suite(tmp_path, tiny_encoder,
                                                                    fake):
    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out).run()
    assert "Settings not from the suite" not in markdown(build(out))
    stage = out / "stages/a/ner-a/seed-1.json"
    record = json.loads(stage.read_text())
    record["sources"].update(crf="data-set default", warmup="data-set default")
    stage.write_text(json.dumps(record))
    assert "a on ner-a: crf, warmup" in markdown(build(out))


def test_jobs_and_threads_follow_omp_num_threads_where_set(tmp_path, monkeypatch, tiny_encoder):
    """Helper trial: OMP_NUM_THREADS=1 was ignored (one job per core was started). Where it is
    set it is each job's thread count, and without --jobs the cores are shared out by it."""
    import bertkit.bench.runner as runner_module

    encoders = resolve_all([f"a={tiny_encoder}"])
    monkeypatch.setattr(runner_module, "usable_cores", lambda: 8)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    plain = Runner(_suite(tmp_path), encoders, tmp_path / "o1")
    assert (plain.jobs, plain.threads) == (8, 1)
    assert (lambda r: (r.jobs, r.threads))(Runner(_suite(tmp_path), encoders, tmp_path / "o2",
                                                  jobs=2)) == (2, 4)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    four = Runner(_suite(tmp_path), encoders, tmp_path / "o3")
    assert (four.jobs, four.threads) == (2, 4)
    one_job = Runner(_suite(tmp_path), encoders, tmp_path / "o4", jobs=1)
    assert (one_job.jobs, one_job.threads) == (1, 4)
    monkeypatch.setenv("OMP_NUM_THREADS", "x")  # not a number: ignored
    assert Runner(_suite(tmp_path), encoders, tmp_path / "o5").threads == 1


def test_runs_at_a_constant_predictions_level_are_named_and_not_judged(
        tmp_path, tiny_encoder, still_encoder, fake, monkeypatch):
    """Every seed of both encoders collapsed (the task's own warning, kept in the stage record):
    the report names them and the comparison's verdict says why it is not judged."""
    monkeypatch.setenv("FAKE_FINETUNE_COLLAPSE", "the classifier may have collapsed: x")
    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}", f"b={still_encoder}"]), out).run()
    stage = json.loads((out / "stages/b/ner-a/seed-1.json").read_text())
    assert stage["collapse"] == "the classifier may have collapsed: x"
    r = build(out, baseline="a")
    assert r["encoders"]["b"]["tasks"]["ner-a"]["floors"] == [stage["collapse"]] * 2
    assert r["comparisons"]["b"]["ner-a"]["verdict"] == \
        "none (both at a constant prediction's level)"
    assert "b on ner-a, 2 of 2 seeds: the classifier may have collapsed: x" in markdown(r)
    monkeypatch.delenv("FAKE_FINETUNE_COLLAPSE")
    fresh = tmp_path / "fresh"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), fresh, seeds=[1]).run()
    assert json.loads((fresh / "stages/a/ner-a/seed-1.json").read_text())["collapse"] is None
    assert build(fresh)["encoders"]["a"]["tasks"]["ner-a"]["floors"] == [None]
    assert "constant prediction's level" not in markdown(build(fresh))


@pytest.mark.parametrize("edit, message", [
    ({"seed": 1}, "seed 1, but its folder and name say 2"),
    ({"task": "ner-b"}, "task 'ner-b', but its folder and name say ner-a"),
    ({"metric": "macro_f1"}, "metric 'macro_f1'"),
    ({"test": 5}, "'test' is 5"),
])
def test_a_stage_record_out_of_its_place_is_refused(tmp_path, tiny_encoder, fake, edit,
                                                     message):
    """A record copied or edited into another seed's, task's or encoder's place would count
    there: refused with the file, nothing written."""
    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out).run()
    path = out / "stages/a/ner-a/seed-2.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **edit}))
    with pytest.raises(BertkitError, match=message.replace("(", r"\(")) as err:
        build(out)
    assert err.value.file == str(path) and not (out / "report.md").exists()


def test_a_comparison_on_test_text_the_encoder_has_seen_is_not_judged(
        tmp_path, tiny_encoder, still_encoder, fake, monkeypatch):
    """BC2GM's test sentences are in the scientific corpus: an encoder pretrained on it is
    shown with the tests' verdict, marked as no claim."""
    from bertkit.bench import contamination

    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}", f"b={still_encoder}"]), out).run()
    manifest = json.loads((out / "bench.json").read_text())
    manifest["encoders"]["b"]["corpora"] = ["scientific"]
    (out / "bench.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(contamination, "task_test_file", lambda task, data: tmp_path)
    monkeypatch.setattr(contamination, "count", lambda task, f, corpora: {"found": 9, "of": 10})
    c = build(out, baseline="a")["comparisons"]["b"]["ner-a"]
    assert c["contaminated"] == ["b: 9 of 10"]
    assert c["verdict"] == ("not judged: contaminated (b: 9 of 10 test examples in the "
                            "pretraining corpora); the tests say none")
    monkeypatch.setattr(contamination, "count", lambda task, f, corpora: {"found": 0, "of": 10})
    assert build(out, baseline="a")["comparisons"]["b"]["ner-a"]["verdict"] == "none"
