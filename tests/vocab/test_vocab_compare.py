"""``bertkit vocab compare``: overlap and splitting figures on hand-made vocabularies."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bertkit.errors import BertkitError
from bertkit.vocab.compare import compare_vocabs

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _vocab(tmp_path: Path, name: str, tokens: list[str]) -> Path:
    path = tmp_path / name / "vocab.txt"
    path.parent.mkdir()
    path.write_text("\n".join(SPECIALS + tokens) + "\n", encoding="utf-8")
    return path


def test_self_comparison_is_full_overlap(tmp_path, corpus_file):
    a = _vocab(tmp_path, "a", ["a", "b", "c", "##b", "##c"])
    result = compare_vocabs(a, a, [corpus_file])
    assert result["overlap"] == {"count": 10, "pct_of_a": 100.0, "pct_of_b": 100.0}
    assert result["corpus"]["a"] == result["corpus"]["b"]
    assert result["a_splits_b_keeps"] == []


def test_known_figures_on_hand_made_pair(tmp_path):
    a = _vocab(tmp_path, "a", ["a", "b", "c", "##b", "##c"])
    b = _vocab(tmp_path, "b", ["a", "b", "c", "ab", "##b", "x"])
    text = tmp_path / "text.txt"
    text.write_text("ab abc c\nAB\n", encoding="utf-8")
    result = compare_vocabs(a, b, [text])
    assert result["a"] == {"name": "a", "size": 10} and result["b"]["size"] == 11
    assert result["overlap"] == {"count": 9, "pct_of_a": 90.0, "pct_of_b": 81.82}
    corpus = result["corpus"]
    assert (corpus["lines"], corpus["words"], corpus["distinct_words"]) == (2, 4, 4)
    # A: ab -> a ##b (x2, AB lower-cased), abc -> a ##b ##c, c -> c: 8 pieces / 4 words.
    assert corpus["a"] == {"subwords_per_word": 2.0, "split_share_pct": 75.0,
                           "unk_rate_pct": 0.0}
    # B: ab -> ab (x2), abc -> [UNK] (no ##c), c -> c: 4 pieces, one [UNK].
    assert corpus["b"] == {"subwords_per_word": 1.0, "split_share_pct": 0.0,
                           "unk_rate_pct": 25.0}
    assert result["a_splits_b_keeps"] == [
        {"word": "AB", "count": 1, "a_pieces": ["a", "##b"]},
        {"word": "ab", "count": 1, "a_pieces": ["a", "##b"]}]


def test_bad_vocabulary_argument(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("just\nwords\n", encoding="utf-8")
    with pytest.raises(BertkitError, match="no \\[UNK\\] token"):
        compare_vocabs(bad, bad)
    # offline here: an unknown name is neither a path, a cached model nor reachable on the hub
    with pytest.raises(BertkitError, match="cannot load a tokenizer|hub cannot be reached"):
        compare_vocabs("no-such-vocabulary-anywhere", bad)


def test_cli_json_and_error_exit(tmp_path):
    from typer.testing import CliRunner

    from bertkit.cli._app import app
    import bertkit.cli.vocab  # noqa: F401  (registers the commands)

    a = _vocab(tmp_path, "a", ["a", "b", "c", "##b", "##c"])
    runner = CliRunner()
    res = runner.invoke(app, ["vocab", "compare", str(a), str(a), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["overlap"]["pct_of_a"] == 100.0
    res = runner.invoke(app, ["vocab", "compare", str(a), str(a), "--corpus",
                              str(tmp_path / "missing.txt")])
    assert res.exit_code == 1
    assert "error:" in res.output and "missing.txt: corpus file not found" in res.output
    assert "Traceback" not in res.output


def test_shipped_vocabularies_load():
    from transformers import AutoTokenizer

    from bertkit.vocab.registry import resolve_vocab

    for name, lower in (("scivocab-uncased", True), ("scivocab-cased", False)):
        path = resolve_vocab(name)
        vocab = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
        assert len(vocab) == 30000 and vocab[:5] == SPECIALS
        tok = AutoTokenizer.from_pretrained(path)
        pieces = tok.tokenize("Phosphorylation of α-synuclein at 37 °C in 5 µM Tris")
        assert "[UNK]" not in pieces
        assert (pieces[0] == "phosphorylation") == lower


@pytest.mark.integration
def test_scivocab_against_minilm_on_valid():
    root = os.environ.get("BERTKIT_DATA")
    if not root:
        pytest.skip("BERTKIT_DATA is not set")
    result = compare_vocabs("scivocab-uncased", "minilm", [Path(root) / "corpus" / "valid.txt"])
    assert 20 < result["overlap"]["pct_of_a"] < 60
    assert (result["corpus"]["a"]["subwords_per_word"]
            < result["corpus"]["b"]["subwords_per_word"])
