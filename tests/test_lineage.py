"""Every encoder folder bertkit writes carries its whole lineage, corpora included, in itself
(issue 66, kind 13): pretraining on a general corpus, a vocabulary extension, continued
pretraining on a scientific one; the last folder, moved and with its parents deleted, still
names both corpora to bench and to the contamination check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.tasks.pretrain.conftest import write_corpus

ENCODERS = Path(__file__).resolve().parents[1] / "benchmarks" / "encoders"


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    for seed, folder in enumerate(("corpus", "corpus-general")):
        (root / folder).mkdir(parents=True)
        write_corpus(root / folder / "train.txt", seed=seed)
    monkeypatch.setenv("BERTKIT_DATA", str(root))
    return root


def _pretrain(model, corpus, out):
    from bertkit.tasks.pretrain import PretrainConfig, pretrain

    pretrain(PretrainConfig(corpus=corpus, model=str(model), output_dir=str(out), max_steps=1,
                            batch_size=2, max_seq_length=32, warmup=0.0, masking="token",
                            device="cpu", cache_dir=str(out.parent / "cache"), save_steps=10))
    return out / "model"


def test_extended_then_continued_encoder_carries_every_corpus_without_its_parents(
        tmp_path, data_root, tiny_encoder):
    from bertkit.bench.encoders import resolve
    from bertkit.data.contamination import corpora_seen
    from bertkit.vocab.extend import extend_model

    general = _pretrain(tiny_encoder, "general", tmp_path / "G")
    extend_model(general, tmp_path / "G-ext", add=2, corpus=[data_root / "corpus" / "train.txt"])
    ext = json.loads((tmp_path / "G-ext" / "bertkit.json").read_text())
    assert ext["task"] == "vocab extend" and ext["corpora"] == ["general"]
    assert [(e["name"], e.get("made_by"), e["corpus"]) for e in ext["lineage"]] == [
        ("G-ext", "vocab extend", []), ("G", "pretrain", ["general"]),
        (Path(tiny_encoder).name, None, [])]
    continued = _pretrain(tmp_path / "G-ext", "scientific", tmp_path / "G+D")
    moved = shutil.copytree(continued, tmp_path / "elsewhere" / "G+D")
    for parent in ("G", "G-ext", "G+D"):  # nothing left to follow by path
        shutil.rmtree(tmp_path / parent)
    meta = json.loads((moved / "bertkit.json").read_text())
    assert meta["corpora"] == ["scientific", "general"]
    assert [e["name"] for e in meta["lineage"]] == ["G+D", "G-ext", "G", Path(tiny_encoder).name]
    assert str(tmp_path) not in json.dumps(meta["lineage"])  # no path of this machine
    encoder = resolve("x", str(moved))
    assert encoder.corpora == (str(data_root / "corpus" / "train.txt"),
                               str(data_root / "corpus-general" / "train.txt"))
    assert corpora_seen(str(moved)) == ["scientific", "general"]


def test_an_extended_folder_still_loads_with_its_tokenizer_check(tmp_path, data_root,
                                                                 tiny_encoder):
    """The new bertkit.json's vocabulary checksum is the extended tokenizer's: the tokenizer
    check every command runs accepts the folder."""
    from bertkit.vocab.extend import extend_model
    from bertkit.vocab.match import check_tokenizer_matches

    extend_model(tiny_encoder, tmp_path / "ext", add=2,
                 corpus=[data_root / "corpus" / "train.txt"])
    check_tokenizer_matches(str(tmp_path / "ext"))


@pytest.mark.parametrize("name, corpora", [
    ("G", ["general"]), ("S", ["scientific"]), ("G+D", ["scientific", "general"]),
    ("G+D37", ["scientific", "general"]), ("G+D37sv", ["scientific", "general"]),
    ("R", [])])
def test_the_committed_encoders_carry_their_whole_lineage(name, corpora):
    meta = json.loads((ENCODERS / name / "bertkit.json").read_text())
    assert meta["corpora"] == corpora and sorted(meta["corpus"].split(",") if meta["corpus"]
                                                 else []) == sorted(corpora)
    from bertkit.data.lineage import lineage_corpora

    assert lineage_corpora(meta["lineage"]) == corpora
    assert "/work" not in json.dumps(meta["lineage"])  # names, not the paths of one machine


def test_the_committed_mini_bench_lists_each_encoders_whole_corpora():
    """The mini suite's results folder recorded the corpora bench found for each encoder; for
    G+D37sv it had missed G's general corpus (the extension between hid it)."""
    from bertkit.data.sets import CORPORA

    folders = {folder: name for name, (folder, _) in CORPORA.items()}
    bench = json.loads((ENCODERS.parent / "results" / "reproduce-v2" / "bench-mini" /
                        "bench.json").read_text())
    for name, enc in bench["encoders"].items():
        listed = [folders[Path(c).parent.name] for c in enc["corpora"]]
        meta = json.loads((ENCODERS / name / "bertkit.json").read_text())
        assert listed == meta["corpora"], name
