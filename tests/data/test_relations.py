import json

import pytest

from bertkit.data.relations import EntitySpan, parse_marked, read_relations
from bertkit.errors import BertkitError


def ents(text, ex):
    return text[ex.e1.start:ex.e1.end], text[ex.e2.start:ex.e2.end]


def write(tmp_path, lines, name="x.jsonl"):
    p = tmp_path / name
    p.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines),
                 encoding="utf-8")
    return p


def test_marker_form_strips_markers_and_maps_spans():
    text, e1, e2 = parse_marked("<< Aspirin >> blocks [[ COX-1 ]].")
    assert text == "Aspirin blocks COX-1."
    assert (e1, e2) == (EntitySpan(0, 7), EntitySpan(15, 20))
    # object first in the text: slots follow the markers, not the order
    text, e1, e2 = parse_marked("[[ COX-1 ]] is blocked by << aspirin >>")
    assert text[e1.start:e1.end] == "aspirin" and text[e2.start:e2.end] == "COX-1"
    assert text == "COX-1 is blocked by aspirin"
    # bare markers (no spaces) when unambiguous
    text, e1, e2 = parse_marked("<<aspirin>> blocks [[COX-1]]")
    assert (text[e1.start:e1.end], text[e2.start:e2.end]) == ("aspirin", "COX-1")


def test_marker_like_text_inside_chemprot_names_is_kept():
    # real ChemProt lines: '[[' inside a chemical name, '>>' as "much greater than"
    t = "<< A3 receptor >> agonist [[ IB-MECA ]] (1-deoxy-1-6[[(3-iodophenyl) methyl]amino]-9H)"
    text, e1, e2 = parse_marked(t)
    assert text[e2.start:e2.end] == "IB-MECA" and "6[[(3-iodophenyl)" in text
    t = "inhibited << Panx1 >> with order [[ carbenoxolone ]] > DIDS >> probenecid >> others"
    text, e1, e2 = parse_marked(t)
    assert (text[e1.start:e1.end], text[e2.start:e2.end]) == ("Panx1", "carbenoxolone")
    assert text.endswith("DIDS >> probenecid >> others")
    t = "order: granisetron> ondansetron=AS-8112>>[[ metoclopramide ]] and << 5-HT3 >>"
    text, e1, e2 = parse_marked(t)
    assert text[e2.start:e2.end] == "metoclopramide" and "AS-8112>>metoclopramide" in text


def test_span_and_tacred_forms(tmp_path):
    toks = ["Aspirin", "inhibits", "COX", "-", "1", "."]
    p = write(tmp_path, [
        {"tokens": toks, "subject": {"start": 0, "end": 1, "type": "CHEMICAL"},
         "object": {"start": 2, "end": 5, "type": "GENE"}, "label": "INHIBITOR"},
        {"token": toks, "subj_start": 2, "subj_end": 4, "obj_start": 0, "obj_end": 0,
         "subj_type": "GENE", "obj_type": "CHEMICAL", "relation": "no_relation", "id": "t1"},
        "",
        {"text": "<< a >> b [[ c ]]", "label": "X"},
    ])
    f = read_relations(p)
    a, b, c = f.examples
    assert a.text == "Aspirin inhibits COX - 1 ." and ents(a.text, a) == ("Aspirin", "COX - 1")
    assert (a.e1.type, a.e2.type, a.label, a.line) == ("CHEMICAL", "GENE", "INHIBITOR", 1)
    assert ents(b.text, b) == ("COX - 1", "Aspirin")  # TACRED ends are inclusive
    assert b.label == "no_relation" and b.raw["id"] == "t1" and b.e1.type == "GENE"
    assert c.line == 4 and ents(c.text, c) == ("a", "c")


BAD = [
    ("{not json", "invalid JSON"),
    ('[1, 2]', "must hold a JSON object"),
    ({"text": "a b [[ c ]]", "label": "X"}, "missing opening marker '<<'"),
    ({"text": "<< a b [[ c ]]", "label": "X"}, "missing closing marker '>>'"),
    ({"text": "<< a >> << b >> [[ c ]]", "label": "X"}, "doubled marker '<<'"),
    ({"text": "<< a [[ b >> c ]]", "label": "X"}, "overlap or nest"),
    ({"text": "<<  >> [[ c ]]", "label": "X"}, "empty entity"),
    ({"text": "<< a >> [[ c ]]"}, "no label"),
    ({"text": "<< a >> [[ c ]]", "label": 3}, "label must be a string"),
    ({"tokens": ["a", "b"], "subject": {"start": 0, "end": 3}, "object": {"start": 1, "end": 2},
      "label": "X"}, "out of range for 2 tokens"),
    ({"tokens": ["a", "b"], "subject": {"start": 1, "end": 1}, "object": {"start": 0, "end": 1},
      "label": "X"}, "out of range"),
    ({"tokens": ["a", "b", "c"], "subject": {"start": 0, "end": 2},
      "object": {"start": 1, "end": 3}, "label": "X"}, "overlap"),
    ({"tokens": ["a", "b"], "subject": {"start": 0, "end": 1}, "label": "X"}, "without 'object'"),
    ({"tokens": ["a", "b"], "subject": {"start": "0", "end": 1},
      "object": {"start": 1, "end": 2}, "label": "X"}, "must be integers"),
    ({"token": ["a", "b"], "subj_start": 0, "subj_end": 0, "obj_start": 1, "obj_end": 2,
      "relation": "X"}, "out of range"),
    ({"token": ["a", "b"], "subj_start": 0, "obj_start": 1, "obj_end": 1, "relation": "X"},
     "without subj_end"),
    ({"sentence": "a b"}, "no TACRED 'token' (fields: sentence)"),
]


@pytest.mark.parametrize("line,message", BAD)
def test_every_bad_line_names_file_and_line(tmp_path, line, message):
    good = {"text": "<< a >> b [[ c ]]", "label": "X"}
    p = write(tmp_path, [good, line, good])
    with pytest.raises(BertkitError) as err:
        read_relations(p)
    assert err.value.file == str(p) and err.value.line == 2
    assert message in err.value.message
    f = read_relations(p, skip_bad_lines=True)
    assert len(f.examples) == 2 and [b.line for b in f.bad_lines] == [2]


def test_not_utf8_and_counting_several_bad_lines(tmp_path):
    p = tmp_path / "x.jsonl"
    good = json.dumps({"text": "<< a >> b [[ c ]]", "label": "X"}).encode()
    p.write_bytes(b"\n".join([good, b'{"text": "\xff"}', b"nope", good, b"{}"]) + b"\n")
    with pytest.raises(BertkitError) as err:
        read_relations(p)
    assert err.value.line == 2 and "not UTF-8" in str(err.value)
    assert "2 more bad line(s): 3, 5" in str(err.value)
    f = read_relations(p, skip_bad_lines=True)
    assert [b.line for b in f.bad_lines] == [2, 3, 5] and len(f.examples) == 2


def test_unlabelled_and_text_lines(tmp_path):
    p = write(tmp_path, ["<< aspirin >> inhibits [[ COX-1 ]]", "no markers"], "x.txt")
    f = read_relations(p, labelled=False, skip_bad_lines=True, text_lines=True)
    assert f.examples[0].label is None and ents(f.examples[0].text, f.examples[0]) == ("aspirin", "COX-1")
    assert f.bad_lines[0].line == 2
    with pytest.raises(BertkitError, match="no relation examples"):
        read_relations(write(tmp_path, ["", " "], "e.jsonl"))
