"""CoNLL-U reading/writing: round trip with multiword tokens, empty nodes and comments; errors."""

import numpy as np
import pytest

from bertkit.data.conllu import format_conllu, parse_conllu, read_conllu, text_sentences
from bertkit.errors import BertkitError

TEXT = (
    "# newdoc id = d1\n"
    "# sent_id = 1\n"
    "# text = I don't know.\n"
    "# a free comment without an equals sign\n"
    "1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_\n"
    "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
    "2\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
    "3\tn't\tnot\tPART\tRB\t_\t0\troot\t_\t_\n"
    "3.1\tknow\t_\t_\t_\t_\t_\t_\t3:obj\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
    "# sent_id = 2\n"
    "1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_\n"
    "\n"
)


def test_round_trip_keeps_every_line():
    sents = parse_conllu(TEXT, "x.conllu")
    assert format_conllu(sents) == TEXT
    s = sents[0]
    assert s.words == ["I", "do", "n't", "."]          # no multiword token, no empty node
    assert s.heads.tolist() == [3, 3, 0, 3]
    assert s.rels == ["nsubj", "aux", "root", "punct"]
    assert s.upos == ["PRON", "AUX", "PART", "PUNCT"]
    assert s.metadata["sent_id"] == "1" and s.metadata["text"] == "I don't know."
    assert s.line == 1 and s.line_of(0) == 5 and s.line_of(3) == 10
    assert sents[1].line == 12 and sents[1].words == ["Yes"]


def test_predictions_replace_only_head_and_deprel():
    sents = parse_conllu(TEXT)
    out = format_conllu(sents, [np.array([2, 0, 2, 2]), np.array([0])],
                        [["a", "root", "b", "c"], ["root"]])
    lines = out.split("\n")
    assert lines[4] == "1\tI\tI\tPRON\tPRP\t_\t2\ta\t_\t_"
    assert lines[5] == "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No"
    assert lines[8] == "3.1\tknow\t_\t_\t_\t_\t_\t_\t3:obj\t_"
    assert lines[3] == "# a free comment without an equals sign"
    back = parse_conllu(out)
    assert back[0].heads.tolist() == [2, 0, 2, 2] and back[0].rels[0] == "a"


def test_unlabelled_input_and_text():
    unl = TEXT.replace("\t3\tnsubj", "\t_\t_")
    with pytest.raises(BertkitError, match=r"x:5: HEAD '_' is not a number"):
        parse_conllu(unl, "x")
    sents = parse_conllu(unl, "x", labelled=False)
    assert sents[0].heads is None and len(sents[0]) == 4
    t = text_sentences(["Hello world .", "", "Bye"], str.split, "t.txt")
    assert [s.words for s in t] == [["Hello", "world", "."], ["Bye"]] and t[1].line == 3
    assert format_conllu(t, [np.array([0, 1, 1]), np.array([0])], [["root", "x", "y"], ["root"]]) \
        .startswith("# text = Hello world .\n1\tHello\t_\t_\t_\t_\t0\troot\t_\t_\n")


@pytest.mark.parametrize("bad,line,message", [
    ("1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\n", 5, "9 tab-separated column"),
    ("1\tI\tI\tPRON\tPRP\t_\tx\tnsubj\t_\t_\n", 5, "HEAD 'x' is not a number"),
    ("1\tI\tI\tPRON\tPRP\t_\t9\tnsubj\t_\t_\n", 5, "HEAD 9 out of range"),
    ("1\tI\tI\tPRON\tPRP\t_\t1\tnsubj\t_\t_\n", 5, "HEAD 1 out of range"),
    ("7\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_\n", 5, "word id 7 out of sequence"),
])
def test_malformed_lines_name_file_and_line(tmp_path, bad, line, message):
    path = tmp_path / "bad.conllu"
    path.write_text(TEXT.replace("1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_\n", bad), encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        read_conllu(path)
    assert str(err.value).startswith(f"{path}:{line}: {message}")


def test_no_root_names_the_sentence(tmp_path):
    path = tmp_path / "noroot.conllu"
    two = "# sent_id = 2\n1\tYes\tyes\tINTJ\tUH\t_\t2\tdep\t_\t_\n2\tno\tno\tINTJ\tUH\t_\t1\tdep\t_\t_\n\n"
    path.write_text(TEXT.split("# sent_id = 2")[0] + two, encoding="utf-8")
    with pytest.raises(BertkitError, match=r"noroot.conllu:12: gold heads are not a tree: no root "
                                           r"\(no word with HEAD 0\) \(sentence sent_id=2\)"):
        read_conllu(path)
    with pytest.raises(BertkitError, match="file not found"):
        read_conllu(tmp_path / "missing.conllu")
