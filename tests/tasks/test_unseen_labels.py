"""Dev/test labels that never occur in training are named with file and line by every task
(NER entity types, RE labels, dep relations) through one warning, ``tasks.common.warn_unseen``."""

from rich.console import Console

from bertkit.data.conllu import read_conllu
from bertkit.tasks.base import TaskData
from bertkit.tasks.common import warn_unseen
from bertkit.tasks.dep.data import relations, unseen_relations
from tests.tasks.dep.conftest import SENTS


def test_warn_unseen_names_file_line_and_kind():
    console = Console(record=True, width=200)
    n = warn_unseen({"Gene": ("test.tsv", 7), "Cell": ("test.tsv", 9)}, "test", "entity type",
                    console)
    text = console.export_text()
    assert n == 2
    assert "test.tsv:7: entity type 'Gene' occurs in test but not in train" in text
    assert "test.tsv:9: entity type 'Cell'" in text
    assert warn_unseen({}, "dev", "label", console) == 0


def test_dep_unseen_relation_has_the_line_of_its_first_use(tmp_path):
    train = tmp_path / "train.conllu"
    train.write_text(SENTS[0] + "\n" + SENTS[1] + "\n", encoding="utf-8")
    test = tmp_path / "test.conllu"
    test.write_text(SENTS[1] + "\n" + SENTS[2] + "\n", encoding="utf-8")
    known = relations(read_conllu(train))
    assert known == ["compound", "dobj", "nsubj", "punct", "root"]
    test_s = read_conllu(test)
    assert unseen_relations(known, test_s) == {}
    # rename one relation of the second test sentence: reported once, at its own line
    lines = test.read_text(encoding="utf-8").replace("\t2\tnsubj\t", "\t2\tnsubj:pass\t")
    test.write_text(lines, encoding="utf-8")
    found = unseen_relations(known, read_conllu(test))
    line = next(i for i, l in enumerate(lines.splitlines(), 1) if "nsubj:pass" in l)
    assert found == {"nsubj:pass": (str(test), line)}


def test_label_examples_prefers_the_whole_training_file():
    data = TaskData({"train": [1, 2], "dev": [], "test": []}, {})
    assert data.label_examples == [1, 2]
    data.full_train = [1, 2, 3]
    assert data.label_examples == [1, 2, 3]


def test_first_unseen_and_the_evaluate_wording():
    from bertkit.tasks.common import first_unseen
    from bertkit.tasks.ner.data import unseen_labels
    from bertkit.data.conll import Sentence

    uses = [("a", "f", 1), ("c", "f", 2), ("b", "f", 3), ("c", "f", 4)]
    assert first_unseen(["a"], uses) == {"c": ("f", 2), "b": ("f", 3)}
    sent = Sentence(["x", "y"], ["B-Chem", "B-Gene"])
    assert list(unseen_labels({"Chem"}, [sent])) == ["Gene"]  # a set of known types
    assert unseen_labels([sent], [sent]) == {}  # or the sentences they come from
    console = Console(record=True, width=200)
    warn_unseen({"Gene": ("t.tsv", 3)}, "dev", "entity type", console, against="model")
    assert "t.tsv:3: entity type 'Gene' occurs in dev but not among the model's labels" in \
        console.export_text()


def test_evaluate_dep_names_a_relation_the_parser_lacks(tmp_path, tiny_encoder):
    from typer.testing import CliRunner

    from bertkit.cli import app
    from tests.tasks.dep.conftest import TEXT, write_dep_dir

    d = write_dep_dir(tmp_path / "d")
    runner = CliRunner()
    res = runner.invoke(app, ["finetune", "dep", "--data", str(d), "-m", tiny_encoder, "-o",
                              str(tmp_path / "run"), "--epochs", "1", "--batch-size", "2",
                              "--device", "cpu"])
    assert res.exit_code == 0, res.output
    (d / "test.conllu").write_text(TEXT.replace("\tcompound\t", "\tflat\t"), encoding="utf-8")
    res = runner.invoke(app, ["evaluate", "dep", "-m", str(tmp_path / "run"), "--data", str(d),
                              "--split", "test", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "relation 'flat' occurs in test but not among the model's labels" in text
