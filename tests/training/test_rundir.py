import pytest

from bertkit.errors import BertkitError
from bertkit.io import write_json
from bertkit.training.rundir import prepare_run_dir


def test_fresh_dir_created(tmp_path):
    assert prepare_run_dir(tmp_path / "a" / "b", resume=False, overwrite=False).is_dir()


def test_existing_run_refused_unless_resume_or_overwrite(tmp_path):
    write_json(tmp_path / "results.json", {})
    with pytest.raises(BertkitError, match="already holds a run"):
        prepare_run_dir(tmp_path, resume=False, overwrite=False)
    assert prepare_run_dir(tmp_path, resume=True, overwrite=False) == tmp_path
    assert prepare_run_dir(tmp_path, resume=False, overwrite=True) == tmp_path


def test_resume_needs_a_run(tmp_path):
    with pytest.raises(BertkitError, match="no run to resume"):
        prepare_run_dir(tmp_path, resume=True, overwrite=False)


def test_unwritable_location_detected_before_training(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(BertkitError, match="cannot write to the output directory"):
        prepare_run_dir(blocker / "run", resume=False, overwrite=False)


def test_atomic_write_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "results.json"
    write_json(target, {"a": 1})
    with pytest.raises(TypeError):
        write_json(target, {"a": object()})
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
