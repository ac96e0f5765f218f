"""CoNLL-2012 coreference reader and writer on hand-made documents."""

import pytest

from bertkit.data.conll2012 import coref_column, format_conll2012, read_conll2012
from bertkit.errors import BertkitError

# LitBank's layout: tab-separated, word in column 4, an empty last field where there is no mention
DOC = """#begin document (tale); part 0
tale\t0\t0\tThe\t_\t(0
tale\t0\t1\told\t_\t
tale\t0\t2\tman\t_\t0)
tale\t0\t3\tand\t_\t
tale\t0\t4\this\t_\t(1|(0)
tale\t0\t5\tdog\t_\t1)

tale\t0\t0\tHe\t_\t(0)
tale\t0\t1\tbarked\t_\t-
#end document
"""


def _write(tmp_path, text, name="doc.conll"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_nested_and_one_token_mentions(tmp_path):
    (doc,) = read_conll2012(_write(tmp_path, DOC))
    assert doc.name == "tale; part 0"
    assert doc.sentences == [["The", "old", "man", "and", "his", "dog"], ["He", "barked"]]
    # entity 0: "The old man", "his" (one token, nested inside "his dog"), "He"
    assert doc.clusters == [[(0, 2), (4, 4), (6, 6)], [(4, 5)]]
    assert doc.token_lines[6] == 9


def test_round_trip_and_column_order(tmp_path):
    path = _write(tmp_path, DOC)
    docs = read_conll2012(path)
    text = format_conll2012(docs, [d.clusters for d in docs])
    again = read_conll2012(_write(tmp_path, text, "again.conll"))
    assert again[0].clusters == docs[0].clusters and again[0].sentences == docs[0].sentences
    # longer mention opens first and closes last at the same token
    assert coref_column(3, [[(0, 2)], [(0, 0)], [(2, 2), (1, 2)]]) == ["(0|(1)", "(2", "(2)|2)|0)"]


def test_scorer_style_space_columns_and_run_together_items(tmp_path):
    text = "#begin document (x); part 000\nx (1(2\nx 2)\nx 1)\n#end document\n"
    (doc,) = read_conll2012(_write(tmp_path, text))
    assert doc.clusters == [[(0, 1)], [(0, 2)]]  # entities by first mention (start, end)


def test_two_documents_and_unlabelled(tmp_path):
    text = DOC + DOC.replace("tale", "other")
    docs = read_conll2012(_write(tmp_path, text))
    assert [d.name for d in docs] == ["tale; part 0", "other; part 0"]
    assert read_conll2012(_write(tmp_path, text), labelled=False)[1].clusters is None


@pytest.mark.parametrize("text, line, words", [
    (DOC.replace("tale\t0\t2\tman\t_\t0)", "tale\t0\t2\tman\t_\t"), 2, "never closed"),
    (DOC.replace("tale\t0\t5\tdog\t_\t1)", "tale\t0\t5\tdog\t_\t1)|3)"), 7, "not open"),
    (DOC.replace("#end document\n", ""), 1, "no #end document"),
    ("#begin document (e); part 0\n\n#end document\n", 1, "no tokens"),
    (DOC.replace("tale\t0\t1\told\t_\t", "tale\t0\t1\told\t(0)\tx"), 3, "another column"),
    (DOC.replace("tale\t0\t1\told\t_\t", "tale\t0\t1\told\t_\t(a"), 3, "not a coreference"),
    (DOC.replace("tale\t0\t1\told\t_\t", "tale\t0\t1\told"), 3, "4 columns where line 2"),
    ("tale\t0\t0\tThe\t_\t-\n", 1, "outside a document"),
    ("", None, "no documents"),
])
def test_bad_input_names_file_and_line(tmp_path, text, line, words):
    path = _write(tmp_path, text)
    with pytest.raises(BertkitError) as err:
        read_conll2012(path)
    assert err.value.file == str(path) and err.value.line == line
    assert words in str(err.value)
