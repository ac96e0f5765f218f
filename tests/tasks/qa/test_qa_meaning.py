"""QA data that parses but means something else (issue 45, kinds 1-6): a SQuAD 1.1 file with an
unanswerable question, ``is_impossible`` beside answers, gold answers inside a word piece or
longer than ``--max-answer-length``, a split written as one JSON array, a window too small for
the question."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.metrics.qa import squad_scores
from bertkit.tasks.qa.checks import gold_reach, reach_lines
from bertkit.tasks.qa.data import QAInputWarning, read_qa_file
from tests.tasks.qa.conftest import CONTEXT, squad_doc, write_qa_dir

runner = CliRunner()


def _finetune(data, model, out, *extra):
    res = runner.invoke(app, ["finetune", "qa", "--data", str(data), "--model", model,
                              "-o", str(out), "--device", "cpu", "--epochs", "1",
                              "--batch-size", "4", "--max-length", "32", "--doc-stride", "8",
                              "--max-question-length", "8", *extra])
    return res, " ".join(res.output.split())


# ------------------------------------------------ 1. a question without answers in a 1.1 file

def test_squad_11_file_with_an_empty_answers_list_is_refused_naming_it(tmp_path, tiny_encoder):
    doc = squad_doc()
    doc["data"][0]["paragraphs"][0]["qas"][2]["answers"] = []  # q3 skipped in the tool
    data = write_qa_dir(tmp_path / "data", doc)
    res, out = _finetune(data, tiny_encoder, tmp_path / "run")
    assert res.exit_code == 1, out
    assert "'q3'" in out and "1.1" in out and "--unanswerable on" in out and "train.json" in out
    assert "Traceback" not in out and not (tmp_path / "run" / "results.json").exists()
    # asked for, SQuAD 2.0 mode runs
    res, out = _finetune(data, tiny_encoder, tmp_path / "run2", "--unanswerable", "on")
    assert res.exit_code == 0, out
    assert json.loads((tmp_path / "run2" / "results.json").read_text())["unanswerable"] is True


# ------------------------------------------------ 2. is_impossible beside answers

def test_is_impossible_beside_answers_keeps_them_as_the_official_scorer(tmp_path):
    doc = squad_doc()
    doc["version"] = "v2.0"
    doc["data"][0]["paragraphs"][0]["qas"][0]["is_impossible"] = True
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(doc))
    with pytest.warns(QAInputWarning, match=r"is_impossible.*'q1'"):
        xs = read_qa_file(path)
    assert xs[0].answers == ["platelet aggregation"] and xs[0].answerable
    gold = {x.qid: x.answers for x in xs}
    scores = squad_scores(gold, {q: "" for q in gold}, "2.0",
                          na_scores={q: 0.0 for q in gold}, span_predictions={})
    assert scores["HasAns_total"] == 4 and "NoAns_total" not in scores


# ------------------------------------------------ 3 and 4. answers out of a span model's reach

def _reach_doc() -> dict:
    doc = copy.deepcopy(squad_doc())
    qas = doc["data"][0]["paragraphs"][0]["qas"]
    qas[3]["answers"] = [{"text": "199", "answer_start": CONTEXT.index("1998")}]  # in "1998"
    qas[2]["answers"].append({"text": "12", "answer_start": CONTEXT.index("120")})  # q3 has 120
    return doc


def test_gold_reach_counts_mid_piece_and_too_long_answers(tmp_path, tokenizer):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(_reach_doc()))
    xs = read_qa_file(path)
    r = gold_reach(xs, tokenizer, max_answer_length=4)
    assert r["mid_piece"] == 1 and r["mid_piece_first"] == ["q4"]  # q3 has a whole-piece answer
    assert r["too_long"] == 1 and r["too_long_first"] == ["q2"]  # nephrotoxicity: 6 pieces
    assert r["cap_95"] == 6  # platelet aggregation 3, nephrotoxicity 6, 120 1, 199 1
    lines = reach_lines({"dev": r})
    assert any("--max-answer-length 4" in x and "'q2'" in x for x in lines)
    assert any("inside a word piece" in x and "'q4'" in x for x in lines)
    assert reach_lines({"dev": gold_reach(xs[:3], tokenizer, 6)}) == []


def test_finetune_reports_answers_out_of_reach(tmp_path, tiny_encoder):
    data = write_qa_dir(tmp_path / "data", _reach_doc())
    res, out = _finetune(data, tiny_encoder, tmp_path / "run", "--max-answer-length", "4")
    assert res.exit_code == 0, out
    assert "test: 1 of 4 answerable questions have every gold answer longer than " \
           "--max-answer-length 4" in out
    assert "test: 1 of 4 answerable questions have every gold answer starting or ending " \
           "inside a word piece" in out
    reach = json.loads((tmp_path / "run" / "results.json").read_text())["gold_out_of_reach"]
    assert reach["test"]["too_long"] == 1 and reach["test"]["mid_piece"] == 1
    assert reach["dev"]["too_long_first"] == ["q2"]


# ------------------------------------------------ 5. a split as one JSON array

def test_a_json_array_of_records_is_read(tmp_path):
    rows = [{"id": "a1", "title": "T", "context": CONTEXT, "question": "What does aspirin do?",
             "answers": {"text": ["inhibits"], "answer_start": [8]}},
            {"id": "a2", "context": CONTEXT, "question": "When?",
             "answers": {"text": ["1998"], "answer_start": [CONTEXT.index("1998")]}}]
    path = tmp_path / "train.json"
    path.write_text(json.dumps(rows, indent=1))
    xs = read_qa_file(path)
    assert [x.qid for x in xs] == ["a1", "a2"] and xs[1].answers == ["1998"]
    rows[1]["answers"]["answer_start"] = [0]
    path.write_text(json.dumps(rows))
    with pytest.raises(BertkitError, match=r"record 2.*'a2'.*does not index"):
        read_qa_file(path)


# ------------------------------------------------ 6. a window too small for the question

@pytest.mark.parametrize("extra", [["--doc-stride", "0"], []])
def test_window_too_small_for_the_question_is_refused_before_any_work(tmp_path, tiny_encoder,
                                                                      extra):
    res = runner.invoke(app, ["finetune", "qa", "--data", str(tmp_path / "none"), "--model",
                              tiny_encoder, "-o", str(tmp_path / "run"), "--max-length", "64",
                              *extra])
    out = " ".join(res.output.split())
    assert res.exit_code == 1, out
    assert "--max-length is 64" in out and "--max-question-length 64" in out \
        and "leaves -3 for context" in out
    assert "Traceback" not in out and not (tmp_path / "run").exists()


@pytest.mark.integration
def test_covid_qa_recipe_cap_holds_95_percent_of_train_and_dev_answers(tokenizer):
    from bertkit.settings.recipe_files import load_recipe
    from bertkit.tasks.qa.data import load_qa_data

    cap = load_recipe("covid-qa", "finetune qa")["max_answer_length"]
    data, _ = load_qa_data("covid-qa", ("train", "dev", "test"))
    at_30 = gold_reach(data["test"], tokenizer, 30)
    assert (at_30["too_long"], at_30["questions"]) == (94, 375)  # the count
    for split in ("train", "dev"):
        r = gold_reach(data[split], tokenizer, cap)
        assert r["too_long"] / r["answerable"] <= 0.05 and r["cap_95"] <= cap
