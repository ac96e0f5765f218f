"""Bad input in the forms of the December 2026 sets (issue 42): each refused with the file, the
line and what was expected, exit 1, before anything is trained."""

import json

import pytest

from tests.tasks.cls.conftest import TEXTS, write_cls_dir
from tests.tasks.re.conftest import PAIRS, write_re_dir
from tests.tasks.sim.conftest import write_sim_dir
from tests.test_bad_input import assert_refused, run_cli

FAST = ["--epochs", "1", "--batch-size", "2", "--device", "cpu"]


def _rewrite(path, line, record):
    lines = path.read_text().splitlines()
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")


def test_biosses_style_non_numeric_score(tmp_path, tiny_encoder):
    d = write_sim_dir(tmp_path / "d")
    _rewrite(d / "dev.jsonl", 2, {"text": "a b", "text_pair": "c d", "score": "n/a"})
    res, text = run_cli("finetune", "sim", "--data", d, "-m", tiny_encoder, "-o",
                        tmp_path / "run", *FAST)
    assert_refused(res, text, "dev.jsonl:2", "'score' is the string 'n/a'", "a number")
    assert not (tmp_path / "run").exists()


def test_multi_label_string_in_one_line_list_in_another(tmp_path, tiny_encoder):
    rows = [(t, [lab]) for t, lab in TEXTS]
    d = write_cls_dir(tmp_path / "d", train=rows, dev=rows, test=rows)
    _rewrite(d / "train.jsonl", 3, {"text": TEXTS[2][0], "label": "Uses"})
    res, text = run_cli("finetune", "cls", "--data", d, "--multi-label", "-m", tiny_encoder,
                        "-o", tmp_path / "run", *FAST)
    assert_refused(res, text, "train.jsonl:3", "'label' is the string 'Uses'",
                   "other labels are lists (line 1)")


QA_ROWS = [{"text": f"Does drug {k} work?", "text_pair": f"We tested drug {k} in mice.",
            "label": ("yes", "no", "maybe")[k % 3]} for k in range(6)]
"""PubMedQA-style records: a question, its abstract as the pair text, yes/no/maybe."""


def _pair_dir(d, single=()):
    """train/dev/test JSON lines of :data:`QA_ROWS`; the splits in ``single`` without the pair."""
    d.mkdir()
    for split in ("train", "dev", "test"):
        rows = [{k: v for k, v in r.items() if k != "text_pair"} if split in single else r
                for r in QA_ROWS]
        (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def test_pubmedqa_line_without_its_pair_text(tmp_path, tiny_encoder):
    d = _pair_dir(tmp_path / "d")
    _rewrite(d / "test.jsonl", 5, {"text": "Does drug 4 work?", "label": "maybe"})
    res, text = run_cli("finetune", "cls", "--data", d, "-m", tiny_encoder, "-o",
                        tmp_path / "run", *FAST)
    assert_refused(res, text, "test.jsonl:5", "no pair text field 'text_pair'",
                   "sentence pairs (line 1 has one)",
                   '"text_pair" (the pair text, a non-empty string)')
    _rewrite(d / "test.jsonl", 5, {"text": "Does drug 4 work?", "text_pair": " ",
                                   "label": "maybe"})
    res, text = run_cli("finetune", "cls", "--data", d, "-m", tiny_encoder, "-o",
                        tmp_path / "run", *FAST)
    assert_refused(res, text, "test.jsonl:5", "'text_pair' is empty")


def test_re_line_whose_markers_overlap(tmp_path, tiny_encoder):
    d = write_re_dir(tmp_path / "d")
    _rewrite(d / "train.jsonl", 2, {"text": "<< aspirin [[ >> reduces fever ]] .",
                                    "label": PAIRS[1][1]})
    res, text = run_cli("finetune", "re", "--data", d, "-m", tiny_encoder, "-o",
                        tmp_path / "run", *FAST)
    assert_refused(res, text, "train.jsonl:2", "overlap")


def test_pair_train_file_with_single_text_dev_and_test_is_refused(tmp_path, tiny_encoder):
    """Helper trial: train of sentence pairs, dev/test without ``text_pair`` trained and scored
    silently (a pair model scored on single texts). The splits must be of one form."""
    d = _pair_dir(tmp_path / "d", single=("dev", "test"))
    res, text = run_cli("finetune", "cls", "--data", d, "-m", tiny_encoder, "-o",
                        tmp_path / "run", *FAST)
    assert_refused(res, text, "dev.jsonl", "no pair text 'text_pair' in any record",
                   "train.jsonl:1 has one", "in every split's records, or in none")
    assert not (tmp_path / "run").exists()


def test_a_pair_model_refuses_single_texts_in_evaluate_and_predict(tmp_path, tiny_encoder):
    """Review: the pair-form check covered only finetune; a pair-trained model scored or run on
    single texts (or the reverse) was a silent wrong answer. The model records ``pairs``."""
    d = _pair_dir(tmp_path / "d")
    run = tmp_path / "run"
    res, text = run_cli("finetune", "cls", "--data", d, "-m", tiny_encoder, "-o", run, *FAST)
    assert res.exit_code == 0, text
    assert json.loads((run / "model" / "bertkit.json").read_text())["pairs"] is True
    snippet = (run / "model" / "README.md").read_text().split("```python\n")[1].split("```")[0]
    assert 'clf({"text": "Does drug 0 work?", "text_pair": "We tested drug 0 in mice."})' \
        in snippet  # the card's example is a pair from the model's own training set
    scope: dict = {}
    exec(snippet.replace("clf({", "out = clf({"), scope)  # noqa: S102 - the card's code
    assert scope["out"]["label"] in ("yes", "no", "maybe")
    single = _pair_dir(tmp_path / "single", single=("train", "dev", "test"))
    res, text = run_cli("evaluate", "cls", "-m", run / "model", "--data", single)
    assert_refused(res, text, "test.jsonl:1", "no pair text 'text_pair'",
                   "trained on sentence pairs")
    res, text = run_cli("predict", "cls", "-m", run / "model", "-i", single / "test.jsonl",
                        "-o", tmp_path / "p.jsonl")
    assert_refused(res, text, "test.jsonl:1", "trained on sentence pairs")
    assert not (tmp_path / "p.jsonl").exists()
    res, text = run_cli("predict", "cls", "-m", run / "model", "-i", d / "test.jsonl",
                        "-o", tmp_path / "ok.jsonl")
    assert res.exit_code == 0, text
