"""Reading SQuAD JSON and datasets JSON lines; bad input named by file, article and question."""

import json

import pytest

from bertkit.errors import BertkitError
from bertkit.tasks.qa.data import load_qa_data, read_qa_file
from tests.tasks.qa.conftest import CONTEXT, squad_doc


def test_squad_json_read_and_space_padded_answer_trimmed(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(squad_doc(unanswerable=True)))
    xs = read_qa_file(path)
    assert [x.qid for x in xs] == ["q1", "q2", "q3", "q4", "q5"]
    q2 = xs[1]
    assert q2.answers == ["nephrotoxicity"] and q2.starts == [56]
    assert CONTEXT[56:56 + len("nephrotoxicity")] == "nephrotoxicity"
    assert xs[2].answers == ["120", "120 patients"] and xs[0].title == "Drugs"
    assert not xs[4].answerable and xs[4].labelled


def test_datasets_jsonl_form(tmp_path):
    path = tmp_path / "train.jsonl"
    rec = {"id": "a1", "title": "T", "context": CONTEXT, "question": "What does aspirin inhibit?",
           "answers": {"text": ["platelet aggregation"], "answer_start": [17]}}
    empty = {**rec, "id": "a2", "answers": {"text": [], "answer_start": []}}
    path.write_text(json.dumps(rec) + "\n\n" + json.dumps(empty) + "\n")
    xs = read_qa_file(path)
    assert [(x.qid, x.answers, x.starts, x.line) for x in xs] == \
        [("a1", ["platelet aggregation"], [17], 1), ("a2", [], [], 3)]


def test_jsonl_with_byte_order_mark_and_line_separator_in_a_context(tmp_path):
    # a BOM is not part of the first record; U+2028 inside a JSON string does not end its line
    ctx = "Aspirin\u2028inhibits platelet aggregation."
    rec = {"id": "b1", "context": ctx, "question": "What?",
           "answers": {"text": ["platelet aggregation"], "answer_start": [17]}}
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(rec, ensure_ascii=False).encode() + b"\n"
                     + json.dumps({**rec, "id": "b2"}, ensure_ascii=False).encode() + b"\n")
    xs = read_qa_file(path)
    assert [(x.qid, x.line) for x in xs] == [("b1", 1), ("b2", 2)]
    assert xs[0].context == ctx and ctx[17:37] == "platelet aggregation"


@pytest.mark.parametrize("change,message", [
    (lambda q, p: q.update(answers=[{"text": "platelet", "answer_start": 3}]),
     "answer_start 3 does not index the answer 'platelet'"),
    (lambda q, p: p.update(context="   "), "empty context"),
    (lambda q, p: p.update(contexts=p.pop("context")), "no 'context' (fields: contexts, qas)"),
    (lambda q, p: p.update(context="\u200b\u200d \ufeff"), "empty context"),  # zero-width only
    (lambda q, p: q.update(question="\u200b"), "empty question"),
    (lambda q, p: q.update(id="q2"), "question id given twice"),
    (lambda q, p: q.update(question=""), "empty question"),
])
def test_bad_input_names_file_article_and_question(tmp_path, change, message):
    doc = squad_doc()
    para = doc["data"][0]["paragraphs"][0]
    change(para["qas"][0], para)
    path = tmp_path / "train.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BertkitError) as err:
        read_qa_file(path)
    text = str(err.value)
    assert message in text and str(path) in text and "article 'Drugs'" in text
    assert "question 'q1'" in text or "question 'q2'" in text


def test_registered_name_without_data_root(monkeypatch):
    monkeypatch.delenv("BERTKIT_DATA", raising=False)
    with pytest.raises(BertkitError, match="BERTKIT_DATA is not set"):
        load_qa_data("squad", ("dev",))


def test_questions_shared_by_train_and_test_are_found(tmp_path):
    # the overlap warning compares question + context (ids differ between files)
    from bertkit.tasks.common import shared_examples, warn_shared

    doc = squad_doc()
    (tmp_path / "train.json").write_text(json.dumps(doc))
    para = doc["data"][0]["paragraphs"][0]
    for q in para["qas"]:
        q["id"] = "t-" + q["id"]
    para["qas"][1]["question"] = "A question only the test file asks?"
    (tmp_path / "test.json").write_text(json.dumps(doc))
    splits = {s: read_qa_file(tmp_path / f"{s}.json") for s in ("train", "test")}
    found = shared_examples(splits)["test"]
    assert len(found) == len(splits["test"]) - 1
    assert all(ex.question == first.question and ex.qid == "t-" + first.qid
               for ex, first in found)
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    assert warn_shared(splits, "questions", Console(file=buf, width=300)) == {"test": len(found)}
    assert "test.json:question t-q1 = train.json:question q1" in buf.getvalue()


def _jsonl_bad_answer_on_line_2(tmp_path, title=None):
    good = {"id": "a1", "context": CONTEXT, "question": "What does aspirin inhibit?",
            "answers": {"text": ["platelet aggregation"], "answer_start": [17]}}
    bad = {**good, "id": "a2", "answers": {"text": ["platelet"], "answer_start": [3]}}
    if title:
        good["title"] = bad["title"] = title
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    return path


def test_jsonl_errors_name_the_line_not_an_empty_article(tmp_path):
    path = _jsonl_bad_answer_on_line_2(tmp_path)
    with pytest.raises(BertkitError) as err:
        read_qa_file(path)
    text = str(err.value)
    assert text.startswith(f"{path}:2: question 'a2': answer_start 3 does not index")
    assert "article" not in text
    # a title given in the records is still named
    path = _jsonl_bad_answer_on_line_2(tmp_path, title="Drugs")
    with pytest.raises(BertkitError, match=r"in\.jsonl:2: article 'Drugs', question 'a2'"):
        read_qa_file(path)


def test_jsonl_duplicate_id_names_both_lines(tmp_path):
    rec = {"id": "a1", "context": CONTEXT, "question": "What?"}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(rec) + "\n\n" + json.dumps(rec) + "\n")
    with pytest.raises(BertkitError) as err:
        read_qa_file(path, labelled=False)
    assert str(err.value).startswith(
        f"{path}:3: question 'a1': question id given twice (first on line 1)")


@pytest.mark.parametrize("form", ["squad", "jsonl"])
def test_prediction_input_with_a_bad_optional_gold_answer_warns_and_keeps_the_question(
        tmp_path, form):
    from bertkit.tasks.qa.data import QAInputWarning

    if form == "squad":
        doc = squad_doc()
        doc["data"][0]["paragraphs"][0]["qas"][2]["answers"][0]["answer_start"] = 5
        path = tmp_path / "in.json"
        path.write_text(json.dumps(doc))
        where, qid = "article 'Drugs', question 'q3'", "q3"
    else:
        path = _jsonl_bad_answer_on_line_2(tmp_path)
        where, qid = f"{path}:2: question 'a2'", "a2"
    with pytest.raises(BertkitError):  # training/evaluation need the answer: refused
        read_qa_file(path)
    with pytest.warns(QAInputWarning) as caught:
        xs = read_qa_file(path, labelled=False)
    (w,) = caught
    assert where in str(w.message) and str(path) in str(w.message)
    assert "gold answers of this question ignored" in str(w.message)
    bad = next(x for x in xs if x.qid == qid)
    assert bad.answers == [] and not bad.labelled and bad.context == CONTEXT
    assert len(xs) == (4 if form == "squad" else 2)
    assert all(x.answers for x in xs if x.qid != qid)


def test_prediction_input_warnings_go_to_the_console_when_given(tmp_path):
    from io import StringIO

    from rich.console import Console

    path = _jsonl_bad_answer_on_line_2(tmp_path)
    buf = StringIO()
    xs = read_qa_file(path, labelled=False, console=Console(file=buf, width=400))
    assert len(xs) == 2
    assert f"warning: {path}:2: question 'a2': answer_start 3" in buf.getvalue()


def test_tapt_text_gives_each_context_once_then_the_questions(qa_dir):
    # four questions on one paragraph: the paragraph must not weigh four times in TAPT
    from bertkit.tasks.registry import get_task
    from tests.tasks.qa.conftest import CONTEXT

    lines = get_task("qa").text_lines(str(qa_dir))
    assert lines == [CONTEXT, "What does aspirin inhibit?", "What does cisplatin cause?",
                     "How many patients were enrolled?", "When was the trial?"]
