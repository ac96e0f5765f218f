"""Atomic outputs never destroy what is already there."""

import pytest

from bertkit.errors import BertkitError
from bertkit.io import atomic_path, write_json, write_text


def test_file_output_onto_a_directory_is_refused_and_the_directory_kept(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("a\tO\n")
    with pytest.raises(BertkitError, match="is a directory"):
        write_text(data, "x")
    with pytest.raises(BertkitError, match="is a directory"):
        write_json(data, {"a": 1})
    with pytest.raises(BertkitError, match="is a directory"):
        with atomic_path(data) as tmp:
            tmp.write_text("x")
    assert (data / "train.tsv").read_text() == "a\tO\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no temporaries left


def test_directory_replaces_directory_and_parent_file_is_reported(tmp_path):
    out = tmp_path / "model"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with atomic_path(out) as tmp:
        tmp.mkdir()
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in out.iterdir()] == ["new.txt"]
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(BertkitError, match="parent of it is a file"):
        write_text(tmp_path / "notes.txt" / "x.jsonl", "y")
    assert (tmp_path / "notes.txt").read_text() == "x"




def test_outputs_get_umask_modes_not_owner_only(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        with atomic_path(tmp_path / "model") as tmp:
            tmp.mkdir()
            weights = tmp / "model.safetensors"
            weights.write_bytes(b"x")
            os.chmod(weights, 0o600)  # as safetensors writes it
        assert stat.S_IMODE((tmp_path / "model" / "model.safetensors").stat().st_mode) == 0o644
        assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o755
    finally:
        os.umask(old)
