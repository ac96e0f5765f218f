"""Failure kinds from public bug reports (issue 17, items 2, 3 and 5), one section each.

* gold dependency trees that are not trees (two roots, a cycle), skipped and counted on request;
  the ``sent_id`` named in every CoNLL-U error;
* a vocabulary build reports its own coverage ([UNK] rate, characters left out) and can apply a
  Unicode normalisation that the saved tokenizer applies again;
* no error message names an option its command lacks (``pretrain --skip-bad-lines``).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.conllu import parse_conllu, read_conllu, tree_problem
from bertkit.decoding.mst import is_tree
from bertkit.errors import BertkitError
from tests.tasks.dep.conftest import TEXT as DEP_TEXT, write_dep_dir

runner = CliRunner()


def run_cli(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res, " ".join(res.output.split())


def assert_refused(res, text: str, *needles: str) -> None:
    assert res.exit_code == 1, text
    assert "Traceback" not in text and "error:" in text, text
    for needle in needles:
        assert needle in text, (needle, text)


# --------------------------------------------------------------------------- 2. gold trees

TWO_ROOTS = ("# sent_id = two-roots\n"
             "1\tIL-2\til-2\tNN\tNN\t_\t0\troot\t_\t_\n"
             "2\tactivates\tactivates\tVBZ\tVBZ\t_\t0\troot\t_\t_\n"
             "3\tSTAT5\tstat5\tNN\tNN\t_\t2\tdobj\t_\t_\n"
             "4\t.\t.\t.\t.\t_\t2\tpunct\t_\t_\n")
CYCLE = ("# sent_id = cycle\n"
         "1\tIL-2\til-2\tNN\tNN\t_\t0\troot\t_\t_\n"
         "2\tactivates\tactivates\tVBZ\tVBZ\t_\t3\tdep\t_\t_\n"
         "3\tSTAT5\tstat5\tNN\tNN\t_\t2\tdobj\t_\t_\n"
         "4\t.\t.\t.\t.\t_\t3\tpunct\t_\t_\n")
BROKEN_RANGE = ("# sent_id = range\n"
                "1\tWe\twe\tPRP\tPRP\t_\t2\tnsubj\t_\t_\n"
                "2\tfound\tfind\tVBD\tVBD\t_\t0\troot\t_\t_\n"
                "4-5\tnf-kb\t_\t_\t_\t_\t_\t_\t_\t_\n"
                "3\tnf\tnf\tNN\tNN\t_\t2\tdobj\t_\t_\n")


def test_tree_problem_agrees_with_is_tree_on_every_head_sequence():
    """Brute force: every head sequence of 1-5 words (heads in 0..n, no self-loop)."""
    for n in range(1, 6):
        for heads in itertools.product(range(n + 1), repeat=n):
            if any(h == k + 1 for k, h in enumerate(heads)):
                continue
            assert (tree_problem(heads) is None) == is_tree(np.array(heads)), heads
    assert tree_problem([0, 0, 2, 2]) == "2 roots (words 1, 2 have HEAD 0)"
    assert tree_problem([3, 1, 2]) == "no root (no word with HEAD 0)"
    assert tree_problem([0, 3, 2, 3]).startswith("the heads form a cycle 2 -> 3 -> 2; 3 word(s)")


@pytest.mark.parametrize("block,line,message", [
    (TWO_ROOTS, 1, "gold heads are not a tree: 2 roots (words 1, 2 have HEAD 0) "
                   "(sentence sent_id=two-roots)"),
    (CYCLE, 1, "gold heads are not a tree: the heads form a cycle 2 -> 3 -> 2; 3 word(s) not "
               "reachable from the root (2, 3, 4) (sentence sent_id=cycle)"),
    (BROKEN_RANGE, 4, "multiword range 4-5 does not cover the next words "
                      "(sentence sent_id=range)"),
])
def test_bad_gold_sentences_name_file_line_and_sent_id(block, line, message):
    with pytest.raises(BertkitError) as err:
        parse_conllu(block, "g.conllu")
    assert str(err.value).startswith(f"g.conllu:{line}: {message}")
    assert "--skip-bad-sentences" in str(err.value)
    if block is not BROKEN_RANGE:  # unlabelled input (predict) has no gold tree to check
        assert len(parse_conllu(block, "g.conllu", labelled=False)) == 1


def test_out_of_sequence_word_names_sent_id_and_unlabelled_errors_name_no_flag():
    text = DEP_TEXT.replace("3\tnf\tnf", "5\tnf\tnf")
    with pytest.raises(BertkitError, match=r"^x:18: word id 5 out of sequence \(sentence "
                                           r"sent_id=c\) \(expected word id 3; or --skip-bad"):
        parse_conllu(text, "x")
    text = DEP_TEXT.replace("2\texpress\t", "7\texpress\t")
    with pytest.raises(BertkitError) as err:
        parse_conllu(text, "x", labelled=False)
    assert "word id 7 out of sequence (sentence sent_id=a)" in str(err.value)
    assert "--skip" not in str(err.value)  # predict dep has no such option


def test_skipped_sentences_are_counted_and_the_rest_kept(tmp_path):
    path = tmp_path / "mixed.conllu"
    path.write_text(TWO_ROOTS + "\n" + DEP_TEXT + "\n" + CYCLE, encoding="utf-8")
    with pytest.raises(BertkitError, match="mixed.conllu:1: gold heads are not a tree"):
        read_conllu(path)
    skipped: list = []
    sents = read_conllu(path, skipped=skipped)
    assert [s.metadata["sent_id"] for s in sents] == ["a", "b", "c"]
    assert [e.line for e in skipped] == [1, 30] and "sent_id=cycle" in str(skipped[1])
    only_bad = tmp_path / "bad.conllu"
    only_bad.write_text(TWO_ROOTS, encoding="utf-8")
    with pytest.raises(BertkitError, match="no good sentences: all 1 are malformed"):
        read_conllu(only_bad, skipped=[])


def _dep_data_with_bad_trees(tmp_path: Path) -> Path:
    bad = TWO_ROOTS + "\n" + DEP_TEXT + "\n" + CYCLE
    return write_dep_dir(tmp_path / "dep", train=bad, test=bad)


def test_finetune_and_evaluate_dep_refuse_then_skip_bad_trees(tmp_path, tiny_encoder):
    data = _dep_data_with_bad_trees(tmp_path)
    out = tmp_path / "run"
    common = ("--data", data, "--model", tiny_encoder, "--device", "cpu", "--batch-size", "2",
              "--arc-mlp", "8", "--rel-mlp", "4")
    res, text = run_cli("finetune", "dep", *common, "-o", out)
    assert_refused(res, text, "train.conllu:1:", "2 roots", "sent_id=two-roots",
                   "--skip-bad-sentences")
    assert not out.exists()
    res, text = run_cli("finetune", "dep", *common, "-o", out, "--epochs", "1",
                        "--skip-bad-sentences")
    assert res.exit_code == 0, text
    assert "skipped 4 malformed sentence(s)" in text
    results = json.loads((out / "results.json").read_text())
    assert results["skipped_sentences"]["count"] == 4  # two in train.conllu, two in test.conllu
    assert results["test"]["sentences"] == 3
    assert "sent_id=cycle" in results["skipped_sentences"]["first"][1]
    res, text = run_cli("evaluate", "dep", "--model", out, "--data", data, "--device", "cpu")
    assert_refused(res, text, "test.conllu:1:", "--skip-bad-sentences")
    metrics = tmp_path / "m.json"
    res, text = run_cli("evaluate", "dep", "--model", out, "--data", data, "--device", "cpu",
                        "--skip-bad-sentences", "--output", metrics)
    assert res.exit_code == 0, text
    scored = json.loads(metrics.read_text())
    assert scored["skipped_sentences"]["count"] == 2 and scored["sentences"] == 3
