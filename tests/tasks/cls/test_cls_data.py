"""Reading classification data: the label set under --max-train-samples, physical line numbers
of CSV/TSV records with line breaks in quoted fields, messages, integer labels."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.tasks.cls.data import Columns, read_examples
from tests.tasks.cls.conftest import TEXTS, write_cls_dir

runner = CliRunner()
FAST = ["--epochs", "1", "--batch-size", "2", "--lr", "1e-3", "--device", "cpu"]
SENT = Columns(text="sentence", label="intent")
FUTURE = ("We leave a joint model\nfor future work .", "Future")  # a line break in the text


def flat(text: str) -> str:
    return " ".join(text.split())


def test_max_train_samples_keeps_the_whole_files_labels_and_csv_lines(tmp_path, tiny_encoder):
    # 'Future' only at the end of train, beyond --max-train-samples 2; in dev and test too; every
    # text with a line break makes each CSV record two physical lines
    rows = [(t.replace(" ( ", "\n( "), lab) for t, lab in TEXTS] + [FUTURE]
    d = write_cls_dir(tmp_path / "d", train=rows, dev=rows, test=rows, ext="csv")
    assert (d / "test.csv").read_text().count("\n") == 1 + 2 * 7
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(run), "--text-column", "sentence", "--label-column",
                              "intent", "--max-train-samples", "2", "--max-length", "16", *FAST])
    assert res.exit_code == 0, res.output
    results = json.loads((run / "results.json").read_text())
    assert results["labels"] == ["Background", "CompareOrContrast", "Future", "Uses"]
    assert "2 of the 4 label(s) (from all 7 training texts) not among the 2 trained on: " \
           "predicted from untrained weights only: CompareOrContrast, Future" in flat(res.output)
    meta = json.loads((run / "model" / "bertkit.json").read_text())
    assert meta["labels"] == results["labels"]
    preds = [json.loads(x) for x in (run / "test_predictions.jsonl").read_text().splitlines()]
    # the physical line each record starts on (header on line 1, two lines a record)
    assert [p["line"] for p in preds] == [2, 4, 6, 8, 10, 12, 14]
    assert preds[-1]["sentence"] == FUTURE[0] and preds[-1]["intent"] == "Future"


def test_dev_label_absent_from_the_whole_train_file_names_file_line_and_source(tmp_path,
                                                                               tiny_encoder):
    d = write_cls_dir(tmp_path / "d", dev=TEXTS + [("A new idea .", "Future")])
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(tmp_path / "r"), "--max-train-samples", "2", *FAST])
    assert res.exit_code == 1
    text = flat(res.output)
    assert (f"{d / 'dev.jsonl'}:7: label 'Future' in dev is not among the labels of the training "
            f"data ({d / 'train.jsonl'}, all 6 examples; --max-train-samples 2 trains on the "
            f"first 2 but takes the labels from all)") in text
    assert "expected one of 'Background', 'CompareOrContrast', 'Uses'" in text
    assert not (tmp_path / "r").exists()
    # without the option the message says nothing of it
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder,
                              "-o", str(tmp_path / "r"), *FAST])
    assert res.exit_code == 1
    assert (f"in dev is not among the labels of the training data ({d / 'train.jsonl'}, all 6 "
            f"examples): the model could not predict it") in flat(res.output)


def test_csv_errors_name_the_physical_line_a_record_starts_on(tmp_path):
    p = tmp_path / "dev.csv"
    body = ["sentence,intent"] + [f'"text {i}\nsecond line",Uses' for i in range(14)]
    body += ['"a stray quote,Uses', "more text", 'end",Uses,extra', "fine text,Uses"]
    p.write_text("\n".join(body) + "\n", encoding="utf-8")
    # header line 1, 14 records of two lines (2-29), the stray quote's record 30-32, then 33
    with pytest.raises(BertkitError) as err:
        read_examples(p, SENT)
    msg = str(err.value)
    assert msg.startswith(f"{p}:30: 3 fields, the header (line 1) has 2 (the record runs over "
                          f"lines 30-32: is a quote left open?)")
    assert ('expected a CSV row with as many fields as the header row, the text in column '
            '"sentence" (--text-column) and the label in column "intent" (--label-column); or '
            '--skip-bad-lines') in msg
    assert "one object a line" not in msg and "JSON" not in msg
    read = read_examples(p, SENT, skip_bad_lines=True)
    assert read.bad_lines == [  # every physical line the record drops is counted
        f"{p}:30: 3 fields, the header (line 1) has 2 (the record runs over lines 30-32: is a "
        f"quote left open?); --quoting none reads a \" as a plain character (an unquoted export)",
        f"{p}:31: dropped with the record of line 30", f"{p}:32: dropped with the record of line 30"]
    assert [x.line for x in read.examples] == [2 * i + 2 for i in range(14)] + [33]
    assert read.examples[0].text == "text 0\nsecond line" and read.examples[-1].text == "fine text"


def test_tsv_blank_lines_and_a_header_without_the_named_columns(tmp_path):
    p = tmp_path / "train.tsv"
    p.write_text("\nsentence\tintent\n\none\tUses\n\"two\nlines\"\tBackground\n\nthree\tUses\n",
                 encoding="utf-8")
    xs = read_examples(p, SENT).examples
    assert [(x.line, x.text, x.label) for x in xs] == [
        (4, "one", "Uses"), (5, "two\nlines", "Background"), (8, "three", "Uses")]
    with pytest.raises(BertkitError) as err:
        read_examples(p)  # default columns text/label
    assert str(err.value) == (f"{p}:2: the header row has no column 'text' (columns: sentence, "
                              f"intent) (expected a first row naming the columns, or "
                              f"--text-column naming one of them)")
    with pytest.raises(BertkitError, match=r"train.tsv:2: the header row has no column 'label'.*"
                                           r"--label-column"):
        read_examples(p, Columns(text="sentence"))
    # predict (unlabelled) needs no label column
    assert len(read_examples(p, Columns(text="sentence"), labelled=False).examples) == 3


def test_tsv_quote_left_open_joining_rows_is_refused_not_merged(tmp_path):
    # the open quote on line 3 runs to line 4; the joined record still has the header's two fields
    p = tmp_path / "train.tsv"
    p.write_text('sentence\tintent\none\tUses\n"two\tBackground\nthree"\tUses\nfour\tUses\n',
                 encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        read_examples(p, SENT)
    assert str(err.value).startswith(
        f"{p}:3: column 'sentence' holds a line break and a tab: the record runs over lines 3-4, "
        f"rows joined by a quote left open?")
    read = read_examples(p, SENT, skip_bad_lines=True)
    assert [(x.line, x.text) for x in read.examples] == [(2, "one"), (5, "four")]
    assert len(read.bad_lines) == 2 and read.bad_lines[0].startswith(f"{p}:3: column")


def test_a_quote_left_open_on_the_last_line_is_named(tmp_path):
    p = tmp_path / "dev.tsv"
    p.write_text('sentence\tintent\none\tUses\n"two\tBackground\n', encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        read_examples(p, SENT)
    assert str(err.value).startswith(f"{p}:3: 1 fields, the header (line 1) has 2 (a field holds "
                                     f"the delimiter: is a quote left open?)")


def _with_bad_second_line(tmp_path, line):
    """``train.jsonl`` with one good line, then ``line``."""
    p = tmp_path / "train.jsonl"
    p.write_text('{"text": "fine", "label": "a"}\n' + line + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("line,message", [
    ('{"text": null, "label": "a"}', "'text' is null, expected a string"),
    ('{"text": 7, "label": "a"}', "'text' is the number 7, expected a string"),
    ('{"text": ["a"], "label": "a"}', "'text' is a list, expected a string"),
    ('{"text": "  ", "label": "a"}', "'text' is empty, expected a non-empty string"),
    ('{"label": "a"}', "no text field 'text' (fields: label); name it with --text-column"),
    ('{"text": "ok", "label": null}', "'label' is null, expected a label string"),
    ('{"text": "ok", "label": 1.5}', "'label' is the number 1.5, expected a string label"),
    ('{"text": "ok", "label": ""}', "'label' is empty, expected a label"),
])
def test_jsonl_messages_say_what_the_field_is(tmp_path, line, message):
    p = _with_bad_second_line(tmp_path, line)
    with pytest.raises(BertkitError) as err:
        read_examples(p)
    assert str(err.value).startswith(f"{p}:2: {message}")
    assert str(err.value).endswith('(expected one JSON object a line with "text" (a non-empty '
                                   'string) and "label" (a string label); or --skip-bad-lines)')


def test_integer_label_among_string_labels_is_refused(tmp_path):
    p = tmp_path / "train.jsonl"
    p.write_text('{"text": "x", "label": "Uses"}\n{"text": "y", "label": "3"}\n'
                 '{"text": "z", "label": 3}\n', encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        read_examples(p)
    assert str(err.value).startswith(
        f"{p}:3: 'label' is the integer 3 but the file's other labels are strings (line 1: "
        f"'Uses'), so it would become a label of its own; write it as a string (\"3\"), or pass "
        f"--multi-label with a list of labels")
    read = read_examples(p, skip_bad_lines=True)
    assert [x.label for x in read.examples] == ["Uses", "3"] and len(read.bad_lines) == 1
    # every label an integer: read as strings, the same labels as "0"/"1" in another file
    p.write_text('{"text": "x", "label": 0}\n{"text": "y", "label": 1}\n{"text": "z", '
                 '"label": 1}\n', encoding="utf-8")
    assert [x.label for x in read_examples(p).examples] == ["0", "1", "1"]
    # multi-label lists keep accepting integers; predict ignores labels
    p.write_text('{"text": "x", "label": ["a", 2]}\n', encoding="utf-8")
    assert read_examples(p, Columns(multi_label=True)).examples[0].label == ["2", "a"]
    p.write_text('{"text": "x", "label": "a"}\n{"text": "y", "label": 5}\n', encoding="utf-8")
    assert [x.label for x in read_examples(p, labelled=False).examples] == [None, None]


@pytest.mark.parametrize("line,message", [
    ('{"text": "ok", "label": "a"', "not JSON"),
    ('{"sentence": "ok", "label": "a"}', "no text field 'text'"),
    ('{"text": "ok"}', "no label field 'label'"),
    ('{"text": "ok", "label": ["a", "b"]}', "--multi-label"),
    ('{"text": "", "label": "a"}', "is empty"),
    ('["text", "label"]', "not a JSON object"),
])
def test_bad_lines_name_file_and_line(tmp_path, line, message):
    p = _with_bad_second_line(tmp_path, line)
    with pytest.raises(BertkitError) as err:
        read_examples(p)
    assert f"{p}:2:" in str(err.value) and message in str(err.value)
    assert len(read_examples(p, skip_bad_lines=True).bad_lines) == 1
