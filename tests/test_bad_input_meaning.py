"""Input that parses but means something else (issue 31, kinds 1-7 and 13), one section each.

1. label names that renderers read as markup (rich ``[x]``, matplotlib ``$...$``);
2. labels that print the same but differ in bytes (trailing space, NFC vs NFD);
3. a CSV/TSV header (or a JSON object) naming a column twice;
4. an unquoted TSV whose texts hold ``"`` (``--quoting none``), drops counted exactly;
5. the same examples in train and test;
6. multi-label data as one delimited string (``--label-sep``);
7. a multi-label model through its model card's pipeline snippet;
13. ``predict`` on lines with zero-width or control characters, and lone CRs.
"""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.tasks.cls.data import Columns, check_known_labels, delimited_labels, read_examples

runner = CliRunner()
FAST = ["--epochs", "1", "--batch-size", "4", "--lr", "1e-3", "--device", "cpu",
        "--max-length", "24"]


def run_cli(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res, " ".join(res.output.split())


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


# --------------------------------------------------------------------------- 1. markup labels

MARKUP = ["$\\frac$", "[/bold]", "[x]"]  # mathtext that cannot parse; a closing tag; a tag


def _texts(prefix: str, n: int = 9):
    return [f"{prefix} sentence number {i} about topic {i % 3} ." for i in range(n)]


def markup_dir(root: Path) -> Path:
    """Markup labels; test shares its first two texts with train (kind 5)."""
    train, dev, test = _texts("train"), _texts("dev"), _texts("test")
    test[:2] = train[:2]
    for split, texts in (("train", train), ("dev", dev), ("test", test)):
        write_jsonl(root / f"{split}.jsonl",
                    [{"text": t, "label": MARKUP[i % 3]} for i, t in enumerate(texts)])
    return root


def test_markup_labels_are_printed_and_drawn_as_written_and_resume_finishes(tmp_path,
                                                                           tiny_encoder):
    data, run = markup_dir(tmp_path / "d"), tmp_path / "run"
    res, text = run_cli("finetune", "cls", "--data", data, "-m", tiny_encoder, "-o", run, *FAST)
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    table = [line for line in res.output.splitlines() if "│" in line]
    for label in MARKUP:  # each label row shown as written
        assert any(line.split("│")[1].strip() == label for line in table), (label, res.output)
    for f in ("model/config.json", "model/README.md", "results.json", "test_confusion.png",
              "test_predictions.jsonl"):
        assert (run / f).is_file(), f
    assert json.loads((run / "results.json").read_text())["labels"] == sorted(MARKUP)
    # 5. the two test texts that are also training texts are named
    assert ("warning: 2 of 9 test texts also in train (test.jsonl:1 = train.jsonl:1; "
            "test.jsonl:2 = train.jsonl:2): scores on them measure memory") in text, text
    assert "dev texts also in train" not in text
    assert json.loads((run / "results.json").read_text())["shared_with_train"] == {"test": 2}
    # stopped after its last checkpoint (what the old crash left): --resume finishes the run
    for f in ("results.json", "test_confusion.png", "test_confusion.csv",
              "test_predictions.jsonl"):
        (run / f).unlink()
    shutil.rmtree(run / "model")
    res, text = run_cli("finetune", "cls", "--data", data, "-m", tiny_encoder, "-o", run, *FAST,
                        "--resume")
    assert res.exit_code == 0, res.output
    assert (run / "results.json").is_file() and (run / "model" / "config.json").is_file()
    assert "[/bold]" in res.output


def test_confusion_plot_and_tables_take_labels_as_text(tmp_path):
    from rich.console import Console

    from bertkit.outputs.tables import label_scores_table
    from bertkit.metrics.cls import label_scores, save_confusion

    gold = ["$\\frac$", "[/bold]", "[x]", "$a_$"]
    labels = sorted(gold)
    _, png = save_confusion(tmp_path / "c", labels, [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0],
                                                     [0, 0, 0, 1]], "test: [/x] $\\frac$")
    assert png.stat().st_size > 0
    console = Console(record=True, width=120)
    console.print(label_scores_table(label_scores(gold, gold, labels), "test: [/data]"))
    out = console.export_text()
    assert "test: [/data]" in out and "baseline (all " in out
    for label in gold:
        assert f"│ {label} " in out, out


# --------------------------------------------------------------------------- 2. spellings

def test_labels_that_print_alike_are_one_label_and_respellings_are_named(tmp_path):
    nfd = unicodedata.normalize("NFD", "Protéine")
    p = write_jsonl(tmp_path / "train.jsonl", [
        {"text": "a", "label": "Uses"}, {"text": "b", "label": "Uses "},
        {"text": "c", "label": "Protéine"}, {"text": "d", "label": nfd}])
    read = read_examples(p)
    assert [x.label for x in read.examples] == ["Uses", "Uses", "Protéine", "Protéine"]
    assert read.notes == [f"{p}:2: label 'Uses ' read as 'Uses' (Unicode NFC, surrounding "
                          f"spaces removed)",
                          f"{p}:4: label {nfd!r} read as 'Protéine' (Unicode NFC, surrounding "
                          f"spaces removed)"]
    # a label that differs only in an invisible character: the message names both spellings
    dev = write_jsonl(tmp_path / "dev.jsonl", [{"text": "e", "label": "Uses\u200b"}])
    with pytest.raises(BertkitError) as err:
        check_known_labels(read_examples(dev).examples, ["Protéine", "Uses"], "dev")
    assert str(err.value).startswith(
        f"{dev}:1: label 'Uses\\u200b' in dev is not among the training labels: the model could "
        f"not predict it ('Uses' looks the same but differs in case or invisible characters)")
    assert str(err.value).endswith("(expected one of 'Protéine', 'Uses')")


def test_ner_tags_and_relation_labels_are_normalised(tmp_path):
    from bertkit.data.conll import read_conll
    from bertkit.data.relations import read_relations

    nfd = unicodedata.normalize("NFD", "Protéine")
    p = tmp_path / "train.tsv"
    p.write_text(f"IL-2\tB-Protéine\nbinds\tO\n\nSTAT5\tB-{nfd}\nbinds\tO \n", encoding="utf-8")
    sents = read_conll(p).sentences
    assert [s.tags for s in sents] == [["B-Protéine", "O"], ["B-Protéine", "O"]]
    r = write_jsonl(tmp_path / "re.jsonl", [
        {"text": "<< aspirin >> inhibits [[ cox ]] .", "label": "CPR:4 "},
        {"text": "<< aspirin >> inhibits [[ cox ]] .", "label": "CPR:4"}])
    assert {x.label for x in read_relations(r).examples} == {"CPR:4"}


# --------------------------------------------------------------------------- 3. doubled names

@pytest.mark.parametrize("ext,sep", [("csv", ","), ("tsv", "\t")])
def test_a_header_naming_a_column_twice_is_refused(tmp_path, ext, sep):
    p = tmp_path / f"train.{ext}"
    p.write_text(sep.join(["text", "label", "text"]) + "\n" + sep.join(["a", "x", "b"]) + "\n",
                 encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        read_examples(p)
    assert str(err.value) == (f"{p}:1: the header row names column 'text' twice (columns 1 and "
                              f"3): which one holds the data is a guess (expected a header row "
                              f"with distinct column names)")
    with pytest.raises(BertkitError, match="names column 'text' twice"):
        read_examples(p, labelled=False)  # predict too


def test_a_json_object_naming_a_field_twice_is_refused(tmp_path):
    p = tmp_path / "train.jsonl"
    p.write_text('{"text": "a", "label": "x"}\n{"text": "b", "label": "x", "label": "y"}\n',
                 encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        read_examples(p)
    assert str(err.value).startswith(f"{p}:2: the object names field 'label' twice ('x' and "
                                     f"'y')")


# --------------------------------------------------------------------------- 4. quotes in TSV

UNQUOTED = ('text\tlabel\n'
            'a 5" screen\tUses\n'
            '"Hello," she said\tBackground\n'
            '"open quote that runs on\tUses\n'
            'next\tBackground\n'
            'last\tUses\n')


def test_unquoted_tsv_is_read_with_quoting_none(tmp_path):
    p = tmp_path / "train.tsv"
    p.write_text(UNQUOTED, encoding="utf-8")
    with pytest.raises(BertkitError) as err:  # csv rules would drop the quotes of line 3
        read_examples(p)
    assert str(err.value).startswith(
        f"{p}:3: column 'text' is '\"Hello,\" she said', which the csv quoting rules read as "
        f"'Hello, she said': quotes dropped; --quoting none reads a \" as a plain character")
    xs = read_examples(p, Columns(quoting="none")).examples
    assert [(x.line, x.text, x.label) for x in xs] == [
        (2, 'a 5" screen', "Uses"), (3, '"Hello," she said', "Background"),
        (4, '"open quote that runs on', "Uses"), (5, "next", "Background"), (6, "last", "Uses")]


def test_skip_bad_lines_counts_every_line_a_record_drops(tmp_path):
    p = tmp_path / "train.tsv"
    p.write_text(UNQUOTED, encoding="utf-8")
    read = read_examples(p, skip_bad_lines=True)
    # line 3 would lose its quotes; the open quote of line 4 runs to the end: lines 4, 5 and 6
    # are dropped with it, each counted
    assert [x.line for x in read.examples] == [2]
    assert [b.split(": ")[0] for b in read.bad_lines] == [f"{p}:3", f"{p}:4", f"{p}:5", f"{p}:6"]
    # a well-formed quoted field is read as csv reads it
    q = tmp_path / "dev.tsv"
    q.write_text('text\tlabel\n"say ""hi"""\tUses\n', encoding="utf-8")
    assert read_examples(q).examples[0].text == 'say "hi"'


def test_finetune_cls_has_a_quoting_option(tmp_path):
    res, text = run_cli("finetune", "cls", "--quoting", "sometimes", "--data", tmp_path)
    assert res.exit_code == 2 and "csv" in text and "none" in text


# --------------------------------------------------------------------------- 5. shared examples

def test_shared_examples_across_tasks():
    from bertkit.data.conll import Sentence
    from bertkit.tasks.common import shared_examples, warn_shared

    train = [Sentence(["IL-2", "binds"], file="train.tsv", line=1),
             Sentence(["STAT5", "."], file="train.tsv", line=4)]
    test = [Sentence(["STAT5", "."], file="test.tsv", line=9),
            Sentence(["other"], file="test.tsv", line=12)]
    found = shared_examples({"train": train, "dev": [], "test": test})
    assert list(found) == ["test"] and found["test"] == [(test[0], train[1])]
    from rich.console import Console

    console = Console(record=True, width=200)
    assert warn_shared({"train": train, "test": test}, "sentences", console) == {"test": 1}
    assert ("warning: 1 of 2 test sentences also in train (test.tsv:9 = train.tsv:4)"
            in console.export_text())


# --------------------------------------------------------------------------- 6. delimited labels

def test_label_sep_splits_delimited_labels_and_unsplit_ones_are_warned_about(tmp_path):
    p = write_jsonl(tmp_path / "train.jsonl", [
        {"text": "a", "label": "Uses;Background"}, {"text": "b", "label": "Uses"},
        {"text": "c", "label": "Background; Uses"}])
    single = read_examples(p).examples
    assert [x.label for x in single] == ["Uses;Background", "Uses", "Background; Uses"]
    warning = delimited_labels(single, Columns())
    assert warning.startswith(f"2 label(s) look like ';'-delimited lists ('Background; Uses', "
                              f"'Uses;Background'; first at {p}:1)")
    assert warning.endswith("pass --multi-label --label-sep ';'")
    multi = Columns(multi_label=True, label_sep=";")
    assert [x.label for x in read_examples(p, multi).examples] == [
        ["Background", "Uses"], ["Uses"], ["Background", "Uses"]]
    assert delimited_labels(read_examples(p, multi).examples, multi) is None
    # multi-label without a separator: still one label per string, and warned about
    unsplit = read_examples(p, Columns(multi_label=True)).examples
    assert "pass --label-sep ';'" in delimited_labels(unsplit, Columns(multi_label=True))
    # commas only count where the parts are labels on their own
    q = write_jsonl(tmp_path / "q.jsonl", [{"text": "a", "label": "Smith, J."},
                                           {"text": "b", "label": "Other"}])
    assert delimited_labels(read_examples(q).examples, Columns()) is None


def test_label_sep_needs_multi_label(tmp_path):
    res, text = run_cli("finetune", "cls", "--label-sep", ";", "--data", tmp_path)
    assert res.exit_code == 1 and "--label-sep is ';'" in text and "--multi-label" in text, text


# --------------------------------------------------------------------------- 7. model card

def test_multi_label_card_snippet_gives_what_predict_gives(tmp_path, tiny_encoder):
    texts = _texts("multi")
    rows = [{"text": t, "label": ";".join(["Uses", "Cites"][: 1 + i % 2])}
            for i, t in enumerate(texts)]
    for split in ("train", "dev", "test"):
        write_jsonl(tmp_path / "d" / f"{split}.jsonl", rows)
    run = tmp_path / "run"
    res, text = run_cli("finetune", "cls", "--data", tmp_path / "d", "-m", tiny_encoder, "-o", run,
                        "--multi-label", "--label-sep", ";", *FAST)
    assert res.exit_code == 0, res.output
    config = json.loads((run / "model" / "config.json").read_text())
    assert config["problem_type"] == "multi_label_classification"
    assert json.loads((run / "results.json").read_text())["labels"] == ["Cites", "Uses"]
    card = (run / "model" / "README.md").read_text()
    snippet = card.split("```python\n")[1].split("```")[0]
    assert "top_k=None" in snippet and "thresholds = {" in snippet
    assert "Its accuracy is exact-set (subset) accuracy" in card  # not per-label accuracy
    assert json.dumps(texts[0]) in snippet  # the example is the model's own first train text
    scope: dict = {}
    exec(snippet, scope)  # noqa: S102 - the card's own code, as a user would run it
    inp = tmp_path / "one.txt"
    inp.write_text(texts[0] + "\n")
    res = runner.invoke(app, ["predict", "cls", "-m", str(run), "-i", str(inp), "--device",
                              "cpu"])
    assert res.exit_code == 0, res.output
    got = json.loads([x for x in res.output.splitlines() if x.startswith("{")][0])
    assert sorted(scope["predicted"]) == sorted(got["predicted"])
    for s in scope["scores"]:  # the same probabilities, not only the same decision
        assert s["score"] == pytest.approx(got["probabilities"][s["label"]], abs=1e-4)


# --------------------------------------------------------------------------- 13. predict lines

def test_predict_flags_empty_lines_and_keeps_one_record_per_line(tmp_path, tiny_encoder):
    d = tmp_path / "d"
    for split in ("train", "dev", "test"):
        write_jsonl(d / f"{split}.jsonl", [{"text": t, "label": ["a", "b"][i % 2]}
                                           for i, t in enumerate(_texts(split))])
    run = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder, "-o",
                              str(run), *FAST])
    assert res.exit_code == 0, res.output
    inp = tmp_path / "in.txt"
    inp.write_bytes("first half\rsecond half\n\u200b\u200d\ufeff\n\x07 \x0b\n\nplain text\r\n"
                    "last\u2028line\n".encode("utf-8"))
    res = runner.invoke(app, ["predict", "cls", "-m", str(run), "-i", str(inp), "--device",
                              "cpu"])
    assert res.exit_code == 0, res.output
    out = [json.loads(x) for x in res.output.split("\n") if x.startswith("{")]
    assert [x["line"] for x in out] == [1, 2, 3, 4, 5, 6]
    assert out[0]["text"] == "first half\rsecond half" and out[5]["text"] == "last\u2028line"
    assert [x.get("empty", False) for x in out] == [False, True, True, True, False, False]
    assert all(x["predicted"] is None and "probability" not in x for x in out[1:4])
    assert all(x["predicted"] in ("a", "b") for x in out[:1] + out[4:])
    flat = " ".join(res.output.split())
    assert ("warning: 3 input line(s) empty once control and zero-width characters are removed "
            "(line 2, 3, 4)") in flat
    # JSON lines: the same flags, one record per input object
    j = write_jsonl(tmp_path / "in.jsonl", [{"text": "ok"}, {"text": "\u200b"}])
    res = runner.invoke(app, ["predict", "cls", "-m", str(run), "-i", str(j), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    out = [json.loads(x) for x in res.output.split("\n") if x.startswith("{")]
    assert [(x["line"], x.get("empty", False)) for x in out] == [(1, False), (2, True)]
    # JSON lines after a UTF-8 byte-order mark, .jsonl or not: still JSON, never raw text
    for name in ("bom.jsonl", "bom.txt"):
        (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + j.read_bytes())
        res = runner.invoke(app, ["predict", "cls", "-m", str(run), "-i", str(tmp_path / name),
                                  "--device", "cpu"])
        assert res.exit_code == 0, res.output
        out = [json.loads(x) for x in res.output.split("\n") if x.startswith("{")]
        assert [x["text"] for x in out] == ["ok", "\u200b"], name


def test_plain_text_for_ner_keeps_lone_crs_and_skips_invisible_lines(tmp_path, tokenizer):
    from bertkit.data.conll import read_text

    p = tmp_path / "in.txt"
    p.write_bytes("aspirin\rinduced\n\u200b \u200d\n\x07\nrenal \u200b failure\n".encode())
    sents = read_text(p, tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str)
    # every word of a line with something visible keeps its place (and gets a tag)
    assert [(s.line, s.tokens) for s in sents] == [(1, ["aspirin", "induced"]),
                                                   (4, ["renal", "\u200b", "failure"])]


def test_plain_text_for_dep_keeps_one_sentence_per_line(tmp_path):
    from bertkit.data.conll import read_lines
    from bertkit.data.conllu import format_conllu, text_sentences

    p = tmp_path / "in.txt"
    p.write_bytes("IL-2 binds\rSTAT5 .\n\u200b\nlast\u2028line\n".encode())
    lines = [text for _, text in read_lines(p, old_mac=False)]
    assert lines == ["IL-2 binds\rSTAT5 .", "\u200b", "last\u2028line"]
    sents = text_sentences(lines, str.split, str(p))
    assert [(s.line, s.words) for s in sents] == [(1, ["IL-2", "binds", "STAT5", "."]),
                                                  (3, ["last", "line"])]
    out = format_conllu(sents)
    assert "# text = IL-2 binds STAT5 .\n" in out and "\r" not in out and "\u2028" not in out


def test_multi_label_splits_labels_that_share_one_delimiter_and_says_so(tmp_path, tiny_encoder):
    """Issue 45, kind 13: --multi-label without --label-sep on 'background;dated' labels trains
    the labels, not every combination as a class of its own."""
    from bertkit.tasks.cls.delimiters import shared_delimiter

    texts = _texts("multi")
    rows = [{"text": t, "label": ["background", "background;dated", "method;dated"][i % 3]}
            for i, t in enumerate(texts)]
    for split in ("train", "dev", "test"):
        write_jsonl(tmp_path / "d" / f"{split}.jsonl", rows)
    run = tmp_path / "run"
    res, text = run_cli("finetune", "cls", "--data", tmp_path / "d", "-m", tiny_encoder, "-o", run,
                        "--multi-label", *FAST)
    assert res.exit_code == 0, res.output
    assert "2 label(s) are ';'-delimited lists" in text and "split on ';'" in text
    assert json.loads((run / "results.json").read_text())["labels"] == [
        "background", "dated", "method"]
    meta = json.loads((run / "model" / "bertkit.json").read_text())
    assert meta["label_sep"] == ";"  # evaluate and predict read the labels the same way
    res, text = run_cli("evaluate", "cls", "-m", run, "--data", tmp_path / "d")
    assert res.exit_code == 0, res.output
    # two separators: ambiguous, left to the warning asking for --label-sep
    mixed = [_example(t, lab) for t, lab in (("a", "x;y"), ("b", "x|z"), ("c", "x"))]
    assert shared_delimiter(mixed, Columns(multi_label=True)) is None
    assert shared_delimiter(mixed[:1], Columns(multi_label=True)) == (";", ["x;y"])
    assert shared_delimiter(mixed[:1], Columns()) is None  # only when multi-label was asked for


def _example(text, label):
    from bertkit.tasks.cls.data import TextExample

    return TextExample(text, label=label)
