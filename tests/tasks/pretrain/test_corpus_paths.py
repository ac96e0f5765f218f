"""A corpus path holding a comma, spaces or non-ASCII letters is one path (issue 45, kind 9;
quast#145, spaCy PR #5931); a comma list of paths still reads each."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.sets import resolve_corpus, split_paths
from tests.tasks.pretrain.conftest import write_corpus


def test_split_paths_keeps_an_existing_path_with_commas_whole(tmp_path):
    odd = write_corpus(tmp_path / "Smith, J. – Müller corpus.txt", lines=20)
    other = write_corpus(tmp_path / "b.txt", lines=20)
    assert split_paths(str(odd)) == [str(odd)]
    assert split_paths(f"{odd},{other}") == [str(odd), str(other)]
    assert split_paths(f"{other}, {odd}") == [str(other), str(odd)]
    assert split_paths("x.txt,y.txt") == ["x.txt", "y.txt"]  # no such files: each part a path
    assert resolve_corpus(f"{odd},{other}") == f"{odd},{other}"


def test_pretrain_reads_a_corpus_and_valid_path_with_a_comma(tmp_path, tiny_encoder):
    odd = write_corpus(tmp_path / "Smith, J. corpus.txt", lines=60)
    valid = write_corpus(tmp_path / "held, out é.txt", lines=20, seed=1)
    res = CliRunner().invoke(app, ["pretrain", "--corpus", str(odd), "--valid", str(valid),
                                   "--model", tiny_encoder, "-o", str(tmp_path / "run"),
                                   "--max-steps", "1", "--batch-size", "2", "--max-seq-length",
                                   "32", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert "not found" not in res.output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["valid"]["loss"] > 0
