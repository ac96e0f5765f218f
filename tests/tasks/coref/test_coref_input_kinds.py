"""Coreference input that used to lie quietly: plain text split after a title ("Mr."), a token
line with a trailing field, a gold span annotated twice (issue 66, kinds 4-6)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
from tokenizers.pre_tokenizers import BertPreTokenizer

from bertkit.data.conll2012 import format_conll2012, read_conll2012
from bertkit.metrics.coref import score_documents
from bertkit.tasks.coref.data import (CorefInputWarning, load_documents, sentence_starts,
                                      text_document)
from tests.data.test_conll2012 import DOC

LITBANK = Path(os.environ.get("BERTKIT_DATA", "/nonexistent")) / "coref" / "litbank"
SCORER_TESTS = LITBANK.parent / "scorer-tests"
TITLES = {"Mr.", "Mrs.", "Dr.", "St.", "Ms."}


def test_titled_names_stay_in_one_sentence():
    text = ("Mr. Holmes met Dr. Watson and Mrs. Hudson on St. James Street. They talked.\n\n"
            "Chapter 2 begins. Ms. Adler wrote. Then—Mrs. Hudson came.")
    doc, offsets = text_document(text, "t", BertPreTokenizer().pre_tokenize_str)
    firsts = [" ".join(s[:3]) for s in doc.sentences]
    assert firsts == ["Mr . Holmes", "They talked .", "Chapter 2 begins", "Ms . Adler", "Then — Mrs"]
    assert doc.sentences[0][-4:] == ["St", ".", "James", "Street", "."][-4:]
    assert len(offsets) == len(doc.words)
    assert [text[a:b] for a, b in offsets[:3]] == ["Mr", ".", "Holmes"]


def test_sentence_starts_break_at_blank_lines_and_sentence_ends():
    text = "Dr. Watson came. He sat.\n\nMr. Holmes"
    assert [text[i:i + 6] for i in sentence_starts(text)] == ["Dr. Wa", "He sat", "Mr. Ho"]


@pytest.mark.integration
@pytest.mark.skipif(not LITBANK.is_dir(), reason="BERTKIT_DATA/coref/litbank not available")
def test_litbank_titled_gold_mentions_are_never_cut_by_a_sentence_start():
    # LitBank's gold holds 306 train and 10 test mentions with a title inside ("Mr. Holmes");
    # the old splitter started a sentence after every one of them
    for split, expected in (("train", 306), ("test", 10)):
        docs = load_documents(LITBANK / split)
        titled = cut = 0
        for doc in docs:
            words = doc.words
            text, starts, at = " ".join(words), [], 0
            for w in words:
                starts.append(at)
                at += len(w) + 1
            bounds = set(sentence_starts(text))
            for cluster in doc.clusters:
                for s, e in cluster:
                    if words[e] in TITLES or not TITLES & set(words[s:e + 1]):
                        continue
                    titled += 1
                    cut += any(starts[s] < b <= starts[e] for b in bounds)
        assert (titled, cut) == (expected, 0), split


TRAILING = DOC.replace("tale\t0\t2\tman\t_\t0)", "tale\t0\t2\tman\t_\t0)\t").replace(
    "tale\t0\t0\tHe\t_\t(0)", "tale\t0\t0\tHe\t_\t(0)\t")


def test_trailing_field_keeps_its_mentions_and_says_so(tmp_path):
    path = tmp_path / "doc.conll"
    path.write_text(TRAILING, encoding="utf-8")
    (doc,) = read_conll2012(path)
    (clean,) = read_conll2012(_write(tmp_path / "clean.conll", DOC))
    assert doc.clusters == clean.clusters == [[(0, 2), (4, 4), (6, 6)], [(4, 5)]]
    (note,) = doc.notes
    assert note.startswith(f"{path}:4: 2 token line(s) of document 'tale; part 0' end in empty "
                           f"fields after field 6")
    assert "line 4 (7 fields), line 9 (7 fields)" in note and "read from field 6" in note
    assert format_conll2012([doc], [doc.clusters]) == format_conll2012([clean], [clean.clusters])


def test_a_trailing_tab_on_every_line_is_not_taken_for_an_empty_coreference_column(tmp_path):
    every = "\n".join(line + "\t" if line.startswith("tale") else line
                      for line in DOC.splitlines()) + "\n"
    (doc,) = read_conll2012(_write(tmp_path / "doc.conll", every))
    assert doc.clusters == [[(0, 2), (4, 4), (6, 6)], [(4, 5)]]
    assert "8 token line(s)" in doc.notes[0] and "read from field 6" in doc.notes[0]
    (litbank,) = read_conll2012(_write(tmp_path / "lit.conll", DOC))  # its own empty last field
    assert litbank.clusters == doc.clusters and litbank.notes == []


@pytest.mark.skipif(not (SCORER_TESTS / "TC-A.key").is_file(),
                    reason="BERTKIT_DATA/coref/scorer-tests not available")
def test_reference_test_files_trailing_tab_and_repeated_spans():
    # the reference scorer's own files end line 22 in a tab (its tab split drops the empty field)
    (key,) = read_conll2012(SCORER_TESTS / "TC-A.key")
    assert len(key.notes) == 1 and "line 22 (6 fields)" in key.notes[0]
    # TC-A-9 repeats span 3-6 eleven times, in two entities (the scorer's "Repeated mention")
    (response,) = read_conll2012(SCORER_TESTS / "TC-A-9.response")
    assert "gold span tokens 3-6 (lines 5-8, 'b1 b2 b3 b4') is annotated 11 times, in " \
           "entities 3 and 1; scored once, in entity 1" in response.notes[1]


def test_trailing_non_empty_field_is_refused_with_field_counts(tmp_path):
    path = _write(tmp_path / "doc.conll",
                  DOC.replace("tale\t0\t2\tman\t_\t0)", "tale\t0\t2\tman\t_\t0)\tx"))
    from bertkit.errors import BertkitError

    with pytest.raises(BertkitError) as err:
        read_conll2012(path)
    assert err.value.line == 4 and "7 fields" in str(err.value) and " 6" in str(err.value)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_gold_span_annotated_twice_warns_naming_document_span_and_entities(tmp_path):
    folder = tmp_path / "test"
    folder.mkdir()
    path = _write(folder / "doc.conll", DOC.replace("tale\t0\t0\tHe\t_\t(0)",
                                                     "tale\t0\t0\tHe\t_\t(0)|(2)"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (doc,) = load_documents(folder)
    messages = [str(w.message) for w in caught if w.category is CorefInputWarning]
    assert len(messages) == 1
    assert ("document 'tale; part 0': gold span tokens 6-6 (line 9, 'He') is annotated 2 times, "
            "in entities 0 and 2; scored once, in entity 0") in messages[0]
    assert messages[0].startswith(f"{path}:9:") and "Repeated mention in the key" in messages[0]
    # scored as said: once, in its first entity (0)
    once = [[(0, 2), (4, 4), (6, 6)], [(4, 5)]]
    assert score_documents([doc.clusters], [once]) == score_documents([once], [once])
