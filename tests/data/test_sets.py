import pytest

from bertkit.data.sets import registered, resolve_local
from bertkit.errors import BertkitError
from bertkit.tasks.ner.data import load_ner_data
from tests.conftest import write_ner_dir


def test_registry_names():
    assert registered("ner") == ["bc2gm", "bc5-chem", "bc5-disease", "bc5cdr", "ebmnlp",
                                 "jnlpba", "ncbi-disease", "sciie"]
    assert registered("cls") == ["acl-arc", "hoc", "paper-field", "pubmedqa", "scicite"]
    assert registered("re") == ["chemprot", "ddi", "sciie"]


def test_named_set_resolves_under_data_root(tmp_path, monkeypatch):
    write_ner_dir(tmp_path / "ner" / "ncbi-disease")
    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path))
    files = resolve_local("ncbi-disease", "ner", (".tsv",))
    assert files["dev"] == tmp_path / "ner" / "ncbi-disease" / "dev.tsv"


def test_named_set_missing_offline_says_what_to_set(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path))
    monkeypatch.setattr("bertkit.tasks.ner.data.load_hub_ner", lambda *a: None)
    with pytest.raises(BertkitError, match=r"BERTKIT_DATA=.* has no ner/jnlpba/.*Set BERTKIT_DATA"):
        load_ner_data("jnlpba")


def test_unknown_name_lists_choices(monkeypatch):
    with pytest.raises(BertkitError, match="bc2gm, bc5-chem, bc5-disease, bc5cdr, ebmnlp, jnlpba, ncbi-disease, sciie"):
        load_ner_data("conll2003-typo")


def test_directory_missing_split(tmp_path):
    d = write_ner_dir(tmp_path / "d")
    (d / "test.tsv").unlink()
    with pytest.raises(BertkitError, match="no test file"):
        load_ner_data(str(d))


def test_valid_alias_for_dev(tmp_path):
    d = write_ner_dir(tmp_path / "d")
    (d / "dev.tsv").rename(d / "valid.tsv")
    assert len(load_ner_data(str(d)).splits["dev"]) == 3


def test_two_files_for_one_split_are_refused(tmp_path):
    d = write_ner_dir(tmp_path / "d")
    (d / "validation.conll").write_text((d / "dev.tsv").read_text())
    with pytest.raises(BertkitError, match=r"2 dev files: dev.tsv, validation.conll"):
        resolve_local(str(d), "ner", (".tsv", ".conll"))
