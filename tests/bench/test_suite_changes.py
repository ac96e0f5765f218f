"""A results folder whose suite or data changed between two runs (issue 66, kinds 1-3): a
re-issued split file and an edited metric are refused before anything trains; one data set
under two task names is refused by ``bench list`` and ``bench run``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.bench.encoders import resolve_all
from bertkit.bench.runner import Runner
from bertkit.bench.suite import load_suite
from bertkit.cli import app
from bertkit.errors import BertkitError

FAKE = str(Path(__file__).with_name("fake_finetune.py"))
SUITE = """\
name: t
seeds: [1]
defaults: {epochs: 1}
tasks:
  - {name: ner-a, task: ner, data: bc5cdr, metric: entity_f1, family: ner}
"""


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """Runner.command runs the stand-in (tests/bench/fake_finetune.py) over a data root of
    our own; returns the data set's folder."""
    original = Runner.command
    monkeypatch.setattr(Runner, "command",
                        lambda self, stage: [sys.executable, FAKE, *original(self, stage)[4:]])
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_FINETUNE_LOG", str(log))
    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path / "data"))
    folder = tmp_path / "data" / "ner" / "bc5cdr"
    folder.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (folder / f"{split}.tsv").write_text(f"Aspirin\tB-Chemical\n{split}\tO\n\n")
    return folder


def _suite(tmp_path, text=SUITE):
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return load_suite(path)


def _calls(tmp_path) -> int:
    log = tmp_path / "calls.log"
    return len(log.read_text().splitlines()) if log.is_file() else 0


def test_a_stage_records_the_size_and_hash_of_each_split(tmp_path, tiny_encoder, fake):
    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out).run()
    record = json.loads((out / "stages/a/ner-a/seed-1.json").read_text())
    import hashlib

    test = (fake / "test.tsv").read_bytes()
    assert record["data_files"]["test"] == {"path": str(fake / "test.tsv"), "bytes": len(test),
                                            "sha256": hashlib.sha256(test).hexdigest()}
    assert sorted(record["data_files"]) == ["dev", "test", "train"]


def test_a_re_issued_test_file_is_refused_naming_it_before_any_training(tmp_path, tiny_encoder,
                                                                         fake):
    out, encoders = tmp_path / "out", resolve_all([f"a={tiny_encoder}"])
    Runner(_suite(tmp_path), encoders, out).run()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (fake / "test.tsv").write_text("Aspirin\tB-Chemical\ncorrected\tO\n\n")
    more_seeds = _suite(tmp_path, SUITE.replace("seeds: [1]", "seeds: [1, 2]"))
    with pytest.raises(BertkitError) as err:
        Runner(more_seeds, encoders, out).run()
    assert err.value.file == str(fake / "test.tsv")
    assert "the data of task ner-a changed since stage a/ner-a/seed-1" in err.value.message
    assert "test test.tsv:" in err.value.message and "train" not in err.value.message
    assert "removed to rerun" in err.value.expected and "another -o folder" in err.value.expected
    assert _calls(tmp_path) == 1  # seed 2 was not trained on the new file
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_changed_metric_is_found_before_any_training_with_a_way_forward(tmp_path,
                                                                          tiny_encoder, fake):
    out, encoders = tmp_path / "out", resolve_all([f"a={tiny_encoder}"])
    Runner(_suite(tmp_path), encoders, out).run()
    edited = _suite(tmp_path, SUITE.replace("seeds: [1]", "seeds: [1, 2]")
                    .replace("entity_f1", "token_macro_f1"))
    with pytest.raises(BertkitError) as err:
        Runner(edited, encoders, out).run()
    assert err.value.file == str(edited.path) and err.value.line == 5
    assert ("the suite now gives metric 'token_macro_f1', but stage a/ner-a/seed-1 was scored "
            "with 'entity_f1'") in err.value.message
    assert "another -o folder" in err.value.expected
    assert str(out / "stages" / "a" / "ner-a") in err.value.expected
    assert _calls(tmp_path) == 1


def test_a_changed_metric_of_a_task_left_out_by_tasks_is_found_too(tmp_path, tiny_encoder,
                                                                      fake):
    """``--tasks`` runs a part, but bench.json takes the whole edited suite: its report would
    stop on the other task's stages, so they are checked as well."""
    two = SUITE + "  - {name: ner-b, task: ner, data: ncbi-disease, metric: entity_f1, " \
                  "family: ner}\n"
    out, encoders = tmp_path / "out", resolve_all([f"a={tiny_encoder}"])
    Runner(_suite(tmp_path, two), encoders, out).run()
    edited = _suite(tmp_path, two.replace("ncbi-disease, metric: entity_f1",
                                          "ncbi-disease, metric: token_macro_f1"))
    with pytest.raises(BertkitError) as err:
        Runner(edited, encoders, out, tasks=edited.only(["ner-a"]).tasks).run()
    assert err.value.line == 6 and "stage a/ner-b/seed-1 was scored with 'entity_f1'" in str(
        err.value)
    assert json.loads((out / "bench.json").read_text())["suite"]["tasks"][1]["metric"] == \
        "entity_f1"  # bench.json not rewritten


def test_an_unchanged_rerun_keeps_its_stages(tmp_path, tiny_encoder, fake):
    out, encoders = tmp_path / "out", resolve_all([f"a={tiny_encoder}"])
    Runner(_suite(tmp_path), encoders, out).run()
    assert Runner(_suite(tmp_path), encoders, out).run() == {"finished": 0, "kept": 1,
                                                             "failed": 0}


def test_a_folder_of_documents_is_fingerprinted_by_names_and_bytes(tmp_path, monkeypatch):
    from bertkit.bench.changes import split_fingerprints

    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path))
    test = tmp_path / "coref" / "set" / "test"
    test.mkdir(parents=True)
    (test / "a.conll").write_text("#begin document (a); part 000\n")
    first = split_fingerprints("coref", "set")["test"]
    assert first["bytes"] == 30 and first["path"] == str(test)
    (test / "a.conll").rename(test / "b.conll")
    assert split_fingerprints("coref", "set")["test"]["sha256"] != first["sha256"]
    assert split_fingerprints("ner", "bc5cdr") == {}  # not on disk: read from the hub


TWICE = SUITE + """\
  - {name: chem, task: ner, data: bc5cdr, metric: entity_f1, family: ner}
"""


def test_one_data_set_under_two_task_names_is_refused_by_list_and_run(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(TWICE, encoding="utf-8")
    cli = CliRunner()
    for res in (cli.invoke(app, ["bench", "list", str(suite)]),
                cli.invoke(app, ["bench", "run", str(suite), "-e", "a=minilm", "-o",
                                 str(tmp_path / "out")])):
        text = " ".join(res.output.split())
        assert res.exit_code == 1, text
        assert (f"{suite}:6: tasks ner-a (line 5) and chem (line 6) both read ner data set "
                "'bc5cdr'") in text
        assert "Traceback" not in text
    assert not (tmp_path / "out").exists()
    # the same set under two task kinds is two data sets (ner/sciie, re/sciie)
    both = SUITE.replace("bc5cdr", "sciie") + \
        "  - {name: sciie-re, task: re, data: sciie, metric: macro_f1, family: re}\n"
    suite.write_text(both, encoding="utf-8")
    assert cli.invoke(app, ["bench", "list", str(suite)]).exit_code == 0


def test_the_report_of_a_stage_scored_with_an_older_metric_says_what_to_do(tmp_path,
                                                                           tiny_encoder, fake):
    from bertkit.bench.report import build

    out = tmp_path / "out"
    Runner(_suite(tmp_path), resolve_all([f"a={tiny_encoder}"]), out).run()
    manifest = json.loads((out / "bench.json").read_text())
    manifest["suite"]["tasks"][0]["metric"] = "token_macro_f1"  # as an older bench wrote it
    (out / "bench.json").write_text(json.dumps(manifest))
    with pytest.raises(BertkitError) as err:
        build(out)
    assert "the suite was edited after this stage ran" in err.value.message
    assert f"remove {out / 'stages' / 'a' / 'ner-a'} and bench run again" in err.value.expected
