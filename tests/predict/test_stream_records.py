"""The streaming reader: records with byte offsets that a resume can start from."""

from __future__ import annotations

import gzip

import pytest

from bertkit.errors import BertkitError
from bertkit.predict.records import Position, iter_records


def test_text_records_have_offsets_a_resume_can_start_from(tmp_path):
    p = tmp_path / "in.txt"
    p.write_bytes(b"\xef\xbb\xbfAspirin .\r\n\nbad \xff line\nlast line")
    recs = list(iter_records(p, "text"))
    assert [(r.index, r.line, r.text, r.bad) for r in recs] == [
        (0, 1, "Aspirin .", None), (1, 2, "", None),
        (2, 3, "", "not valid UTF-8 at byte 4 of the line"), (3, 4, "last line", None)]
    assert recs[-1].end == p.stat().st_size
    tail = list(iter_records(p, "text", Position(recs[2].start, recs[2].line, recs[2].index)))
    assert [(r.index, r.line, r.text, r.start) for r in tail] == \
        [(r.index, r.line, r.text, r.start) for r in recs[2:]]


def test_jsonl_flags_lines_that_do_not_parse(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text('{"text": "a"}\n{"text": \n[1, 2]\n', encoding="utf-8")
    recs = list(iter_records(p, "jsonl"))
    assert recs[0].value == {"text": "a"} and recs[0].bad is None
    assert recs[1].bad.startswith("not JSON (") and recs[2].bad == "a JSON list, not an object"


def test_conll_sentences_and_gzip(tmp_path):
    text = "-DOCSTART-\tO\n\nA\tO\nb\tB-X\n\n\nc\tO\n"
    p = tmp_path / "in.tsv.gz"
    p.write_bytes(gzip.compress(text.encode()))
    recs = list(iter_records(p, "conll"))
    assert [(r.index, r.line, [c for _, c in r.rows]) for r in recs] == [
        (0, 3, [["A", "O"], ["b", "B-X"]]), (1, 7, [["c", "O"]])]
    again = list(iter_records(p, "conll", Position(recs[1].start, recs[1].line, 1)))
    assert [(r.index, r.line) for r in again] == [(1, 7)]
    bad = tmp_path / "bad.tsv"
    bad.write_text("A\tO\nb\n", encoding="utf-8")
    with pytest.raises(BertkitError, match=r"bad.tsv:2: only one column in 'b'"):
        list(iter_records(bad, "conll"))
    notgz = tmp_path / "x.txt.gz"
    notgz.write_text("plain")
    with pytest.raises(BertkitError, match="not gzip data"):
        list(iter_records(notgz, "text"))


def test_conll2012_documents_stray_lines_and_a_document_without_its_end(tmp_path):
    text = ("# a comment\n\n#begin document (a); part 0\na 0 0 Hi -\n\n#end document\n\n"
            "x 0 0 stray -\n#end document\n"          # lines of no document: one record
            "#begin document (b); part 0\nb 0 0 Yo -\n\n"  # no #end: ends where c begins
            "#begin document (c); part 0\nc 0 0 caf\xe9 -\n#end document\n")
    p = tmp_path / "in.conll"
    p.write_bytes(text.encode("utf-8").replace("caf\xe9".encode(), b"caf\xe9"))
    recs = list(iter_records(p, "conll2012"))
    assert [(r.index, r.line, [n for n, _ in r.rows], r.bad) for r in recs] == [
        (0, 3, [3, 4, 5, 6], None), (1, 8, [8, 9], None), (2, 10, [10, 11, 12], None),
        (3, 13, [13, 15], "line 14: not valid UTF-8 at byte 9 of the line")]
    assert recs[0].rows[1] == (4, ["a 0 0 Hi -"]) and recs[-1].end == p.stat().st_size
    tail = list(iter_records(p, "conll2012", Position(recs[2].start, recs[2].line, 2)))
    assert [(r.index, r.line, r.rows) for r in tail] == [(r.index, r.line, r.rows)
                                                         for r in recs[2:]]


def test_a_file_record_is_the_whole_file(tmp_path):
    p = tmp_path / "story.txt.gz"
    p.write_bytes(gzip.compress("\ufeffOne.\r\n\r\nTwo.\n".encode()))
    (rec,) = iter_records(p, "file")
    assert (rec.index, rec.line, rec.text, rec.bad) == (0, 1, "One.\r\n\r\nTwo.\n", None)
    assert list(iter_records(p, "file", Position(rec.end, 2, 1))) == []  # resumed after it
    p = tmp_path / "bad.txt"
    p.write_bytes(b"One.\nTw\xff.\n")
    assert next(iter_records(p, "file")).bad == "line 2: not valid UTF-8 at byte 7 of the file"
