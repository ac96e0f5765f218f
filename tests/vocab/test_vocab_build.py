"""``bertkit vocab build``: round trip, special tokens, case, corpus formats and bad input."""

from __future__ import annotations

import gzip
import json

import pytest
from transformers import AutoTokenizer, BertTokenizerFast

from bertkit.errors import BertkitError
from bertkit.vocab.build import build_vocab
from bertkit.vocab.wordpiece import BERT_SPECIAL_TOKENS, finalize_vocab

SENTENCES = ["Binding at 37 °C with 5 µM α-synuclein and β-amyloid .",
             "λ = 450 nm ; Ω < 2 ; Δ G = −3 kJ ( θ = 30 ° ) ."]


@pytest.mark.parametrize("algorithm", ["wordpiece", "sentencepiece"])
def test_round_trip_keeps_scientific_symbols(corpus_file, tmp_path, algorithm):
    out = tmp_path / "vocab"
    info = build_vocab([corpus_file], out, size=300, algorithm=algorithm)
    assert sorted(p.name for p in out.iterdir()) == [
        "special_tokens_map.json", "stats.json", "tokenizer.json", "tokenizer_config.json",
        "vocab.txt"]
    vocab = out.joinpath("vocab.txt").read_text(encoding="utf-8").splitlines()
    assert len(vocab) == info["size"] == 300
    assert vocab[:5] == list(BERT_SPECIAL_TOKENS)
    assert len(set(vocab)) == len(vocab)
    for tok in (AutoTokenizer.from_pretrained(out), BertTokenizerFast.from_pretrained(out)):
        assert tok.get_vocab() == {t: i for i, t in enumerate(vocab)}
        for sentence in SENTENCES:
            pieces = tok.tokenize(sentence)
            assert "[UNK]" not in pieces, pieces
        ids = tok("α-synuclein")["input_ids"]
        assert ids[0] == vocab.index("[CLS]") and ids[-1] == vocab.index("[SEP]")
    stats = json.loads(out.joinpath("stats.json").read_text())
    assert stats["corpus"]["lines"] == 2000 and stats["corpus"]["words"] > 20000
    assert stats["case"] == "uncased" and stats["algorithm"] == algorithm
    assert stats["seconds"] >= 0 and stats["peak_memory_mb"] > 0


def test_cased_and_uncased(corpus_file, tmp_path):
    build_vocab([corpus_file], tmp_path / "u", size=300, uncased=True)
    build_vocab([corpus_file], tmp_path / "c", size=300, uncased=False)
    uncased = AutoTokenizer.from_pretrained(tmp_path / "u")
    cased = AutoTokenizer.from_pretrained(tmp_path / "c")
    u_vocab = (tmp_path / "u" / "vocab.txt").read_text(encoding="utf-8").splitlines()[5:]
    c_vocab = (tmp_path / "c" / "vocab.txt").read_text(encoding="utf-8").splitlines()[5:]
    assert not any(ch.isupper() for t in u_vocab for ch in t)
    assert "é" not in "".join(u_vocab) and "é" in "".join(c_vocab)
    assert any(ch.isupper() for t in c_vocab for ch in t)
    assert uncased.tokenize("Café PROTEIN") == uncased.tokenize("cafe protein")
    assert cased.tokenize("Café")[0].startswith("C")
    assert "[UNK]" not in cased.tokenize("Café Zürich naïve")


def test_extra_special_tokens_first(corpus_file, tmp_path):
    specials = list(BERT_SPECIAL_TOKENS) + ["[E1]", "[/E1]"]
    build_vocab([corpus_file], tmp_path / "v", size=300, special_tokens=specials)
    vocab = (tmp_path / "v" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab[:7] == specials
    tok = AutoTokenizer.from_pretrained(tmp_path / "v")
    assert tok.tokenize("[E1] protein [/E1]")[0] == "[E1]"


def test_gz_and_directory_corpus(corpus_file, tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    text = corpus_file.read_bytes()
    (folder / "a.txt").write_bytes(text)
    with gzip.open(folder / "sub" / "b.txt.gz", "wb") as fh:
        fh.write(text)
    (folder / ".hidden").write_bytes(b"\xff\x00")
    info = build_vocab([folder], tmp_path / "v", size=300)
    assert info["corpus"]["lines"] == 4000
    assert [p.rsplit("/", 1)[-1] for p in info["corpus"]["files"]] == ["a.txt", "b.txt.gz"]


def test_finalize_vocab_completes_alphabet():
    vocab = finalize_vocab(["[PAD]", "ab", "##c", "xyz", "a", "(", "b"], BERT_SPECIAL_TOKENS, 19)
    assert vocab[:5] == list(BERT_SPECIAL_TOKENS)
    assert {"a", "##a", "b", "##b", "c", "##c", "x", "##x", "(", "y", "##y"} <= set(vocab)
    assert "##(" not in vocab and len(vocab) == 19 and "ab" in vocab and "xyz" not in vocab
    with pytest.raises(BertkitError, match="at least 18"):
        finalize_vocab(["ab", "##c", "xyz", "("], BERT_SPECIAL_TOKENS, 17)


def _no_leftovers(parent, name):
    return not (parent / name).exists() and not any(
        p.name.startswith(f".{name}.") for p in parent.iterdir())


@pytest.mark.parametrize("content, message", [
    (b"", "the corpus is empty"),
    (b"\n  \n\n", "no text"),
])
def test_empty_corpus(tmp_path, content, message):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(BertkitError, match=message):
        build_vocab([path], tmp_path / "out", size=100)
    assert _no_leftovers(tmp_path, "out")


def test_missing_file(tmp_path):
    with pytest.raises(BertkitError, match="not found") as err:
        build_vocab([tmp_path / "nope.txt"], tmp_path / "out")
    assert "nope.txt" in str(err.value)


def test_non_utf8_reports_file_line_and_offset(tmp_path, corpus_file):
    good = corpus_file.read_bytes()
    first = good.split(b"\n")[0] + b"\n"
    path = tmp_path / "latin1.txt"
    path.write_bytes(first + b"Caf\xe9 au lait\n" + good)
    with pytest.raises(BertkitError) as err:
        build_vocab([path], tmp_path / "out", size=300)
    assert f"latin1.txt:2: not valid UTF-8 at byte {len(first) + 3} of the file" in str(err.value)
    assert "--skip-bad-lines" in str(err.value)
    assert _no_leftovers(tmp_path, "out")
    info = build_vocab([path], tmp_path / "out", size=300, skip_bad_lines=True)
    assert info["corpus"]["skipped_lines"] == 1 and info["corpus"]["lines"] == 2001


def test_binary_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"some text\n" + bytes(range(256)))
    with pytest.raises(BertkitError, match=r"data.bin:2: binary data \(NUL byte\) at byte 10 of the file"):
        build_vocab([path], tmp_path / "out", size=300)


def test_corrupt_gz(tmp_path):
    path = tmp_path / "bad.txt.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(BertkitError, match="bad.txt.gz: cannot read the file"):
        build_vocab([path], tmp_path / "out", size=300)


def test_size_below_alphabet(corpus_file, tmp_path):
    with pytest.raises(BertkitError, match="smaller than the 5 special tokens plus"):
        build_vocab([corpus_file], tmp_path / "out", size=20)
    assert _no_leftovers(tmp_path, "out")


def test_existing_output_needs_overwrite(corpus_file, tmp_path):
    out = tmp_path / "out"
    build_vocab([corpus_file], out, size=250)
    with pytest.raises(BertkitError, match="already holds a vocabulary"):
        build_vocab([corpus_file], out, size=300)
    assert len(out.joinpath("vocab.txt").read_text().splitlines()) == 250
    build_vocab([corpus_file], out, size=300, overwrite=True)
    assert len(out.joinpath("vocab.txt").read_text().splitlines()) == 300
    assert _no_leftovers(tmp_path, "never")


def test_bad_special_tokens(corpus_file, tmp_path):
    with pytest.raises(BertkitError, match="lacks \\[MASK\\]"):
        build_vocab([corpus_file], tmp_path / "o", special_tokens=["[PAD]", "[UNK]", "[CLS]",
                                                                   "[SEP]"])
    with pytest.raises(BertkitError, match="duplicate"):
        build_vocab([corpus_file], tmp_path / "o",
                    special_tokens=list(BERT_SPECIAL_TOKENS) + ["[PAD]"])


def test_cli_build_and_errors(corpus_file, tmp_path):
    from typer.testing import CliRunner

    from bertkit.cli._app import app
    import bertkit.cli.vocab  # noqa: F401  (registers the commands)

    runner = CliRunner()
    out = tmp_path / "v"
    args = ["vocab", "build", "--corpus", str(corpus_file), str(corpus_file), "--size", "300",
            "--cased", "--no-progress", "--out", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert json.loads((out / "stats.json").read_text())["corpus"]["lines"] == 4000
    res = runner.invoke(app, args)
    assert res.exit_code == 1 and "already holds a vocabulary" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(app, ["vocab", "build", "--corpus", str(corpus_file), "--size", "300",
                              "--special-tokens", "[PAD],[UNK]", "--out", str(tmp_path / "w")])
    assert res.exit_code == 1 and "lacks [CLS], [SEP], [MASK]" in res.output
    assert not (tmp_path / "w").exists()


def test_cli_warns_when_the_corpus_yields_fewer_tokens(corpus_file, tmp_path):
    from typer.testing import CliRunner

    from bertkit.cli._app import app
    import bertkit.cli.vocab  # noqa: F401  (registers the commands)

    out = tmp_path / "v"
    res = CliRunner().invoke(app, ["vocab", "build", "--corpus", str(corpus_file), "--size",
                                   "100000", "--no-progress", "--out", str(out)])
    assert res.exit_code == 0, res.output
    size = json.loads((out / "stats.json").read_text())["size"]
    assert size < 100000
    assert f"yields only {size:,} of the 100,000 tokens" in " ".join(res.output.split())
