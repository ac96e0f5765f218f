"""``bertkit bench`` through CliRunner: list, and bad input as a message with exit 1."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bertkit.cli import app

runner = CliRunner()

SUITE = """\
name: t
seeds: [1]
tasks:
  - {name: ner-a, task: ner, data: bc5cdr, metric: entity_f1, family: ner}
"""


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _flat(res) -> str:
    return " ".join(res.output.split())


def test_list_shows_the_shipped_suites_and_one_suites_tasks():
    res = invoke("bench", "list")
    assert res.exit_code == 0
    assert all(name in res.output for name in ("scibert", "blurb-lite", "mini"))
    res = invoke("bench", "list", "scibert")
    assert res.exit_code == 0 and "chemprot" in res.output and "token_macro_f1" in res.output
    assert "reference: SciBERT (SciVocab), base (110 M)" in _flat(res)
    # into a pipe (helper trial: the recipe and lite columns were cut at 80 columns)
    row = next(line for line in invoke("bench", "list", "mini").output.splitlines()
               if line.startswith("│ bc5cdr "))
    assert "max_length 128, epochs 3, precision fp32, lr 1e-3" in row
    assert "max_train_samples 2000, epochs 2" in row


@pytest.mark.parametrize("args, message", [
    (["no-such-suite", "-e", "a=minilm"], "unknown suite 'no-such-suite'"),
    (["{suite}", "-e", "a=/no/such/dir"], "encoder a: /no/such/dir does not exist"),
    (["{suite}", "-e", "a={tmp}"], "is not an encoder (no readable config.json)"),
    (["{suite}", "-e", "a=minilm", "-e", "a=minilm"], "two encoders named a"),
    (["{suite}", "-e", "minilm"], "--encoder 'minilm' is not NAME=MODEL"),
    # an unset $TASKS must not start the whole suite
    (["{suite}", "-e", "a=minilm", "--tasks", ""], "--tasks '' names no task"),
    (["{suite}", "-e", "a=minilm", "--tasks", " , "], "--tasks ' , ' names no task"),
])
def test_bad_input_is_a_message_and_exit_1(tmp_path, args, message):
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    args = [a.format(suite=suite, tmp=tmp_path) for a in args]
    res = invoke("bench", "run", *args, "-o", tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert message in _flat(res) and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_an_unknown_data_set_in_a_suite_names_the_line(tmp_path):
    """bench list refuses what bench run refuses (helper trial: list said "not runnable yet"
    and exit 0 for a misspelt data set)."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("data: bc5cdr", "data: bc9"), encoding="utf-8")
    for res in (invoke("bench", "run", suite, "-e", "a=minilm", "-o", tmp_path / "out"),
                invoke("bench", "list", suite)):
        assert res.exit_code == 1
        assert f"{suite}:4: task ner-a: 'bc9' is not a registered ner data set" in _flat(res)


def test_report_of_a_folder_that_does_not_exist(tmp_path):
    res = invoke("bench", "report", tmp_path / "nope")
    assert res.exit_code == 1 and "no such folder" in _flat(res)


def test_report_of_a_folder_without_a_run(tmp_path):
    res = invoke("bench", "report", tmp_path)
    assert res.exit_code == 1 and "no bench run here (no bench.json)" in _flat(res)


def test_a_non_empty_folder_that_is_no_bench_run_is_refused(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    res = invoke("bench", "run", suite, "-e", "a=minilm", "-o", out)
    assert res.exit_code == 1 and "not empty and holds no bench run" in _flat(res)
    assert (out / "mine.txt").read_text() == "keep me" and len(list(out.iterdir())) == 1


@pytest.mark.parametrize("old, new, words", [
    ("family: ner}", "family: ner, recipe: {epochz: 2}}", "(its recipe): unknown option 'epochz'"),
    ("family: ner}", "family: ner, lite: {max_train_sample: 2}}", "(its lite caps): unknown "
                                                                  "option 'max_train_sample'"),
    # helper trial: the error said "defaults, recipe or lite settings"; it names the layer
    ("tasks:", "defaults: {epochz: 2}\ntasks:", "(the suite's defaults): unknown option 'epochz'"),
])
def test_list_refuses_the_settings_that_run_refuses(tmp_path, old, new, words):
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace(old, new), encoding="utf-8")
    listed = invoke("bench", "list", suite)
    ran = invoke("bench", "run", suite, "-e", "a=minilm", "-o", tmp_path / "out")
    assert listed.exit_code == ran.exit_code == 1, listed.output
    line = 5 if "defaults" in new else 4
    for res in (listed, ran):
        assert f"{suite}:{line}: task ner-a" in _flat(res) and words in _flat(res)


_BAD_STAGES = [
    ("seed-1.json", lambda r: [1, 2, 3], "a stage record is a JSON object"),
    ("seed-1.json", lambda r: {**r, "score": "high"}, "stage record: 'score' is 'high'"),
    ("seed-1.json", lambda r: {**r, "score": None}, "stage record: 'score' is None"),
    ("seed-1.json", lambda r: {k: v for k, v in r.items() if k != "task"},
     "stage record: 'task' is None"),
    ("seed-1.json", lambda r: {**r, "precision": ["fp32"]}, "stage record: 'precision' is"),
    ("seed-1.json", lambda r: {**r, "metric": "f2"}, "stage record: metric 'f2'"),
    ("bench.json", lambda r: "garbage", "unreadable bench.json"),
    ("bench.json", lambda r: {"suite": "x"}, "bench.json lacks its suite, encoders"),
    ("bench.json", lambda r: {**r, "encoders": {"minilm": {**r["encoders"]["minilm"],
                                                           "fingerprint": 7}}},
     "bench.json: encoder 'minilm' is"),
    ("bench.json", lambda r: {**r, "encoders": {"minilm": "minilm"}},
     "bench.json: encoder 'minilm' is 'minilm'"),
]


@pytest.mark.parametrize("name,corrupt,said", _BAD_STAGES)
def test_report_of_a_corrupt_stage_record_or_manifest_is_one_message(tmp_path, name, corrupt,
                                                                    said):
    """Helper trial: each of these ended in a traceback; now the file and what was expected,
    exit 1, and the report already written is left as it was."""
    import json
    import shutil
    from pathlib import Path

    src = Path(__file__).parents[2] / "benchmarks/results/blurb/new-sets-minilm"
    out = tmp_path / "bench"
    (out / "stages/minilm").mkdir(parents=True)
    shutil.copytree(src / "stages/minilm/ddi", out / "stages/minilm/ddi")
    shutil.copy(src / "bench.json", out / "bench.json")
    (out / "report.md").write_text("an earlier report", encoding="utf-8")
    ok = invoke("bench", "report", out)  # the copy itself is a good run, one task of ten
    assert ok.exit_code == 0 and "(partial: 9 tasks without results or short of seeds)" in \
        _flat(ok)
    board = (out / "report.md").read_text(encoding="utf-8").split("## Leaderboard")[1]
    assert "| minilm | this run |" in board and " (partial) |" in board  # its suite score
    (out / "report.md").write_text("an earlier report", encoding="utf-8")
    path = out / name if name == "bench.json" else out / "stages/minilm/ddi" / name
    good = json.loads(path.read_text(encoding="utf-8"))
    bad = corrupt(good)
    path.write_text(bad if isinstance(bad, str) else json.dumps(bad), encoding="utf-8")
    res = invoke("bench", "report", out)
    assert res.exit_code == 1 and said in _flat(res) and str(path) in _flat(res)
    assert "Traceback" not in res.output
    assert (out / "report.md").read_text(encoding="utf-8") == "an earlier report"
