"""CoNLL column counts: every token line has as many columns as the first, for finetune and predict.

A one-column line among tagged lines used to make ``predict ner`` drop the gold column of the
whole file without a word (and ``finetune`` refused the same file); a 3-column line among
2-column lines was read with its middle column as the tag.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.conll import looks_like_conll, read_conll
from bertkit.errors import BertkitError
from tests.conftest import TRAIN, write_ner_dir

runner = CliRunner()


def two_column_file(path: Path, stray: str, at: int = 104) -> Path:
    """A 2-column BIO file whose line ``at`` is ``stray`` (sentences of 5 tokens, blank between)."""
    lines = []
    while len(lines) < at + 20:
        lines += ["Aspirin\tB-Chemical", "induced\tO", "renal\tB-Disease", "failure\tI-Disease",
                  ".\tO", ""]
    if lines[at - 1] == "":
        at += 1
    lines[at - 1] = stray
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("labelled", [True, False])
def test_one_column_line_in_a_tagged_file_is_refused_in_both_modes(tmp_path, labelled):
    p = two_column_file(tmp_path / "file.tsv", "justatoken")
    with pytest.raises(BertkitError) as err:
        read_conll(p, labelled=labelled)
    assert (err.value.file, err.value.line) == (str(p), 104)
    assert str(err.value).startswith(f"{p}:104: only one column in 'justatoken'")
    assert "2 columns as on line 1, the first token line" in str(err.value)


def test_three_columns_among_two_names_line_and_expected_count(tmp_path):
    p = two_column_file(tmp_path / "train.tsv", "renal\tJJ\tB-Disease", at=9)
    with pytest.raises(BertkitError) as err:
        read_conll(p)
    assert err.value.line == 9
    assert str(err.value) == (f"{p}:9: 3 columns in 'renal\\tJJ\\tB-Disease' (expected 2 columns "
                              f"as on line 1, the first token line)")


def test_first_token_line_sets_the_count_after_docstart(tmp_path):
    # EBM-NLP form: -DOCSTART- with its own column count, then 4 space-separated columns
    p = tmp_path / "pico.txt"
    p.write_text("-DOCSTART- (1)\n\nLeft NN O I-INT\ngrafts NN O I-INT\n\n-DOCSTART- (2)\n\n"
                 "in NN O\n", encoding="utf-8")
    with pytest.raises(BertkitError, match=r"pico.txt:8: 3 columns in 'in NN O' \(expected 4 "
                                           r"columns as on line 3, the first token line\)"):
        read_conll(p)
    p.write_text("-DOCSTART- (1)\n\nLeft NN O I-INT\ngrafts NN O I-INT\n\n-DOCSTART- (2)\n\n"
                 "in NN O O\n", encoding="utf-8")
    f = read_conll(p)
    assert [s.tags for s in f.sentences] == [["B-INT", "I-INT"], ["O"]]
    # predict's auto-detection: the "-DOCSTART- (1)" lines made this file read as plain text
    assert looks_like_conll(p)


def test_empty_tag_column_is_named(tmp_path):
    p = tmp_path / "f.tsv"
    p.write_text("a\tO\nb\t\n", encoding="utf-8")
    with pytest.raises(BertkitError, match=r"f.tsv:2: empty tag \(last column\) in 'b'"):
        read_conll(p, labelled=False)


def test_tokens_only_file_reads_unlabelled_and_a_tagged_line_in_it_is_refused(tmp_path):
    p = tmp_path / "tokens.txt"
    p.write_text("Aspirin\ninduced\n\nfailure\n", encoding="utf-8")
    f = read_conll(p, labelled=False)
    assert f.scheme == "none" and [s.tags for s in f.sentences] == [[], []]
    assert [s.tokens for s in f.sentences] == [["Aspirin", "induced"], ["failure"]]
    with pytest.raises(BertkitError, match=r"tokens.txt:1: only one column"):
        read_conll(p)  # finetune needs tags
    p.write_text("Aspirin\ninduced\tO\n", encoding="utf-8")
    with pytest.raises(BertkitError, match=r"tokens.txt:2: 2 columns in 'induced\\tO' \(expected "
                                           r"1 column as on line 1, the first token line\)"):
        read_conll(p, labelled=False)


@pytest.mark.integration
def test_shared_ner_files_read_without_false_errors():
    root = Path(os.environ["BERTKIT_DATA"]) / "ner"
    files = sorted(p for p in root.glob("*/*") if p.suffix in (".tsv", ".txt", ".conll"))
    assert files, root
    for path in files:
        f = read_conll(path)
        assert f.sentences and f.scheme in ("IOB1", "IOB2", "IOBES"), path
        assert all(len(s.tags) == len(s.tokens) for s in f.sentences), path
        assert looks_like_conll(path), path


@pytest.fixture(scope="module")
def ner_run(tmp_path_factory, tiny_encoder) -> Path:
    tmp = tmp_path_factory.mktemp("ner-run")
    data = write_ner_dir(tmp / "d")
    run = tmp / "run"
    res = runner.invoke(app, ["finetune", "ner", "--data", str(data), "--model", tiny_encoder,
                              "-o", str(run), "--device", "cpu", "--epochs", "1",
                              "--batch-size", "2"])
    assert res.exit_code == 0, res.output
    return run


def test_predict_refuses_a_one_column_line_like_finetune_and_writes_nothing(tmp_path, ner_run,
                                                                             tiny_encoder):
    bad = two_column_file(tmp_path / "file.tsv", "justatoken")
    out = tmp_path / "out.conll"
    res = runner.invoke(app, ["predict", "ner", "-m", str(ner_run), "-i", str(bad), "-o", str(out),
                              "--device", "cpu"])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "Traceback" not in text, text
    assert f"{bad}:104: only one column in 'justatoken'" in text
    assert not out.exists()
    # finetune on the same file names the same place
    data = write_ner_dir(tmp_path / "d", train=bad.read_text(encoding="utf-8"))
    res = runner.invoke(app, ["finetune", "ner", "--data", str(data), "--model", tiny_encoder,
                              "-o", str(tmp_path / "run"), "--device", "cpu"])
    assert res.exit_code == 1 and f"{data / 'train.tsv'}:104: only one column" in \
        " ".join(res.output.split())


def test_predict_keeps_gold_for_a_clean_file_and_takes_tokens_only(tmp_path, ner_run):
    good = two_column_file(tmp_path / "file.tsv", "kidney\tO")
    out = tmp_path / "out.conll"
    res = runner.invoke(app, ["predict", "ner", "-m", str(ner_run), "-i", str(good), "-o", str(out),
                              "--device", "cpu"])
    assert res.exit_code == 0, res.output
    rows = [r.split("\t") for r in out.read_text(encoding="utf-8").splitlines() if r]
    assert {len(r) for r in rows} == {3}  # token, gold, predicted on every row
    assert rows[0][:2] == ["Aspirin", "B-Chemical"] and ["kidney", "O"] in [r[:2] for r in rows]
    tokens = tmp_path / "tokens.txt"
    tokens.write_text("Aspirin\ninduced\n\nfailure\n", encoding="utf-8")
    res = runner.invoke(app, ["predict", "ner", "-m", str(ner_run), "-i", str(tokens),
                              "--format", "jsonl", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(r) for r in res.stdout.splitlines() if r.startswith("{")]
    assert [r["tokens"] for r in lines] == [["Aspirin", "induced"], ["failure"]]


def test_finetune_refuses_a_three_column_line(tmp_path, tiny_encoder):
    train = TRAIN.replace("renal\tB-Disease", "renal\tJJ\tB-Disease")
    data = write_ner_dir(tmp_path / "d", train=train)
    out = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "ner", "--data", str(data), "--model", tiny_encoder,
                              "-o", str(out), "--device", "cpu"])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "Traceback" not in text, text
    assert f"{data / 'train.tsv'}:5: 3 columns in" in text
    assert "expected 2 columns as on line 3, the first token line" in text
    assert not out.exists()
