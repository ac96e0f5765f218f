"""The streaming reader: records with byte offsets that a resume can start from."""

from __future__ import annotations

import gzip

import pytest

from bertkit.errors import BertkitError
from bertkit.streaming.records import Position, iter_records


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
