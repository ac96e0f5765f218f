from pathlib import Path

import pytest

from bertkit.data.conll import format_conll, looks_like_conll, read_conll, read_text
from bertkit.errors import BertkitError


def write(tmp_path: Path, text: str | bytes, name="f.tsv") -> Path:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return p


def test_reads_tabs_docstart_crlf_and_bom(tmp_path):
    p = write(tmp_path, "\ufeff-DOCSTART-\tO\r\n\r\nAspirin\tB-Chem\r\nworks\tO\r\n\r\n\r\nX\tO\r\n")
    f = read_conll(p)
    assert [s.tokens for s in f.sentences] == [["Aspirin", "works"], ["X"]]
    assert f.sentences[0].tags == ["B-Chem", "O"]
    assert f.sentences[0].line == 3 and f.sentences[1].line == 7
    assert f.scheme == "IOB2"


def test_predict_markers_read_back_as_sentence_boundaries(tmp_path):
    """predict's CoNLL output marks an input line without tokens as ``# line N: empty`` (or
    ``skipped: ...``); reading that output back (evaluate, finetune) must not take the marker
    for a token line of two columns."""
    p = write(tmp_path, "Aspirin\tB-Chem\n\n# line 2: empty\n\n# line 3: skipped: not valid "
                        "UTF-8\n\nworks\tO\nwell\tO\n")
    f = read_conll(p)
    assert [s.tokens for s in f.sentences] == [["Aspirin"], ["works", "well"]]
    assert f.sentences[1].line == 7
    # a real token "#" is still a token
    f = read_conll(write(tmp_path, "#\tO\nline\tO\n", name="hash.tsv"))
    assert [s.tokens for s in f.sentences] == [["#", "line"]]


def test_reads_cr_only_line_ends_with_line_numbers(tmp_path):
    p = write(tmp_path, "Aspirin\tB-Chem\rworks\tO\r\rX\tB-Dis\r")
    f = read_conll(p)
    assert [s.tokens for s in f.sentences] == [["Aspirin", "works"], ["X"]]
    assert f.sentences[1].tags == ["B-Dis"] and f.sentences[1].line == 4
    bad = write(tmp_path, "Aspirin\tB-Chem\rworks\r", name="bad.tsv")
    with pytest.raises(BertkitError, match=r"bad.tsv:2: only one column"):
        read_conll(bad)


def test_space_separated_multi_column_uses_first_and_last(tmp_path):
    p = write(tmp_path, "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n")
    f = read_conll(p)
    assert f.sentences[0].tokens == ["EU", "rejects"]
    assert f.sentences[0].tags == ["B-ORG", "O"]


def test_iob1_detected_and_converted(tmp_path):
    p = write(tmp_path, "a\tI-Entity\nb\tI-Entity\nc\tB-Entity\nd\tO\ne\tI-Entity\n")
    f = read_conll(p)
    assert f.scheme == "IOB1"
    assert f.sentences[0].tags == ["B-Entity", "I-Entity", "B-Entity", "O", "B-Entity"]


def test_iobes_detected_and_converted(tmp_path):
    p = write(tmp_path, "a\tB-X\nb\tE-X\nc\tS-Y\nd\tO\n")
    f = read_conll(p)
    assert f.scheme == "IOBES"
    assert f.sentences[0].tags == ["B-X", "I-X", "B-Y", "O"]


@pytest.mark.parametrize("text,line,words", [
    ("a\tO\nb\n", 2, "one column"),
    ("a\tO\nb\tENTITY\n", 2, "unknown tag"),
    ("a\tO\n\nb\tI-\n", 3, "no entity type"),
    ("a\tO\nb\tX-Chem\n", 2, "unknown tag"),
])
def test_malformed_lines_name_file_and_line(tmp_path, text, line, words):
    p = write(tmp_path, text)
    with pytest.raises(BertkitError) as err:
        read_conll(p)
    assert err.value.line == line and err.value.file == str(p)
    assert words in str(err.value) and f"{p}:{line}:" in str(err.value)


def test_bad_encoding_reports_line_and_byte(tmp_path):
    p = write(tmp_path, b"a\tO\nb\xff\tO\n")
    with pytest.raises(BertkitError, match=r"f.tsv:2: not valid UTF-8 at byte 5"):
        read_conll(p)


@pytest.mark.parametrize("text", ["", "\n\n", "-DOCSTART-\tO\n\n"])
def test_empty_file(tmp_path, text):
    with pytest.raises(BertkitError, match="no sentences"):
        read_conll(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(BertkitError, match="file not found"):
        read_conll(tmp_path / "nope.tsv")


def test_unlabelled_conll_and_text(tmp_path):
    p = write(tmp_path, "Aspirin\nworks\n\nfine\n")
    f = read_conll(p, labelled=False)
    assert [s.tokens for s in f.sentences] == [["Aspirin", "works"], ["fine"]]
    assert looks_like_conll(p)
    t = write(tmp_path, "Aspirin induced renal failure in two patients .\n\nSecond line here .\n", "t.txt")
    assert not looks_like_conll(t)
    sents = read_text(t, lambda s: [(w, None) for w in s.split()])
    assert [len(s.tokens) for s in sents] == [8, 4] and sents[1].line == 3


def test_format_conll_has_gold_and_prediction(tmp_path):
    f = read_conll(write(tmp_path, "a\tB-X\nb\tO\n"))
    assert format_conll(f.sentences, [["O", "O"]]) == "a\tB-X\tO\nb\tO\tO\n"


def test_io_tags_read_as_iob1_runs_and_round_trip(tmp_path):
    """EBM-NLP's form: 4 space-separated columns, IO tags (no B-), -DOCSTART- lines."""
    from bertkit.data.conll import read_conll

    p = tmp_path / "pico.txt"
    p.write_text("-DOCSTART- (123)\n\nLeft NN O I-INT\ngrafts NN O I-INT\nin NN O O\n"
                 "elderly NN O I-PAR\npatients NN O I-PAR\nand NN O O\nmortality NN O I-OUT\n",
                 encoding="utf-8")
    f = read_conll(p)
    assert f.scheme == "IOB1" and len(f.sentences) == 1
    assert f.sentences[0].tags == ["B-INT", "I-INT", "O", "B-PAR", "I-PAR", "O", "B-OUT"]
    assert f.sentences[0].line == 3


def test_iob2_file_with_stray_i_tags_stays_iob2_and_names_the_lines(tmp_path):
    """spaCy#2661: an IOB2 file with a few stray I- tags is not IOB1 (issue 45, kind 12)."""
    from io import StringIO

    from rich.console import Console

    from bertkit.tasks.ner.config import NERConfig
    from bertkit.tasks.ner.task import NERTask

    body = ("Aspirin\tB-Chem\nworks\tO\n\nCisplatin\tB-Chem\ncauses\tO\nrenal\tB-Dis\n"
            "failure\tI-Dis\n\nsome\tO\nheadache\tI-Dis\n\nX\tI-Chem\nY\tB-Dis\n")
    p = write(tmp_path, body, name="train.tsv")
    f = read_conll(p)
    assert f.scheme == "IOB2" and f.stray == [10, 12]
    assert f.sentences[2].tags == ["O", "B-Dis"] and f.sentences[3].tags == ["B-Chem", "B-Dis"]
    note = f.stray_note()
    assert "2 stray I- tag(s)" in note and "line(s) 10, 12" in note and "train.tsv" in note
    for split in ("dev", "test"):
        write(tmp_path, "a\tB-Chem\n", name=f"{split}.tsv")
    out = StringIO()
    data = NERTask().load(NERConfig(data=str(tmp_path)), ("train", "dev", "test"),
                          Console(file=out, width=300))
    assert data.info["schemes"]["train"] == "IOB2"
    assert "warning:" in out.getvalue() and "line(s) 10, 12" in out.getvalue()
