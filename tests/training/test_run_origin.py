"""``--resume`` on a run folder of another task or written by another bertkit version says so
first (issue 45, kinds 10-11)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bertkit import __version__
from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.training.rundir import check_run_dir
from bertkit.training.run_origin import saved_command


def _run_folder(path, command="bertkit finetune ner --data bc5cdr", version=__version__,
                settings="epochs: 2\nlr: 5.0e-05\ncrf: false\n"):
    (path / "checkpoints" / "step_1").mkdir(parents=True)
    (path / "config.yaml").write_text(settings)
    (path / "environment.json").write_text(json.dumps(
        {"command": command, "packages": {"bertkit": version}}))
    return path


@pytest.mark.parametrize("command, expected", [
    ("bertkit finetune ner -d x", "finetune ner"), ("__main__.py pretrain --corpus c", "pretrain"),
    ("bertkit run bc5cdr-ner-minilm", None), ("bertkit finetune --help", None)])
def test_saved_command_reads_the_recorded_command_line(tmp_path, command, expected):
    assert saved_command(_run_folder(tmp_path, command)) == expected


def test_resume_as_another_task_names_the_folders_task_first(tmp_path):
    run = _run_folder(tmp_path / "run")
    with pytest.raises(BertkitError) as err:
        check_run_dir(run, True, False, {"epochs": 2, "doc_stride": 128}, {},
                      command="finetune qa")
    assert "holds a `finetune ner` run, not a `finetune qa` run" in str(err.value)
    assert "bertkit finetune ner --resume" in str(err.value)
    check_run_dir(run, True, False, {"epochs": 2, "lr": 5e-5, "crf": False}, {},
                  command="finetune ner")  # its own task resumes


def test_resume_through_the_cli_as_another_task(tmp_path):
    run = _run_folder(tmp_path / "run")
    res = CliRunner().invoke(app, ["finetune", "cls", "--resume", "-o", str(run)])
    out = " ".join(res.output.split())
    assert res.exit_code == 1 and "holds a `finetune ner` run, not a `finetune cls` run" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("task", ["qa", "cls"])
def test_resume_as_another_task_is_named_before_any_saved_setting_is_read(tmp_path, task):
    # a real ner run's settings: qa cannot take max_length 64 (its --doc-stride check) nor cls
    # metric span; the folder's task must be said first (issue 66, kind 14)
    run = _run_folder(tmp_path / "run", settings="epochs: 2\nlr: 5.0e-05\nmetric: span\n"
                                                 "max_length: 64\ndata: bc5cdr\n")
    res = CliRunner().invoke(app, ["finetune", task, "--resume", "-o", str(run)])
    out = " ".join(res.output.split())
    assert res.exit_code == 1, out
    assert f"holds a `finetune ner` run, not a `finetune {task}` run" in out
    assert "--max-length" not in out and "--metric" not in out and "settings:" not in out


def test_resume_of_another_versions_run_names_both_versions_and_the_settings(tmp_path):
    run = _run_folder(tmp_path / "run", version="0.0.9",
                      settings="epochs: 2\nlr: 5.0e-05\ncrf: false\nsubword_pooling: first\n")
    with pytest.raises(BertkitError) as err:
        check_run_dir(run, True, False, {"epochs": 2, "lr": 5e-5, "crf": False, "pack": False},
                      {"pack": True}, command="finetune ner")
    text = str(err.value)
    assert f"written by bertkit 0.0.9 with bertkit {__version__}" in text
    assert "settings only bertkit 0.0.9 has: subword_pooling" in text
    assert f"settings only bertkit {__version__} has: pack" in text
    assert "pip install bertkit==0.0.9" in text and "--output-dir" in text
    # the same version: the usual settings message
    run2 = _run_folder(tmp_path / "run2", settings="epochs: 2\nlr: 5.0e-05\ncrf: true\n")
    with pytest.raises(BertkitError, match="crf: saved True, now False"):
        check_run_dir(run2, True, False, {"epochs": 2, "lr": 5e-5, "crf": False}, {},
                      command="finetune ner")
