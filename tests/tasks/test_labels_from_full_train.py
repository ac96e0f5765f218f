"""``--max-train-samples`` never narrows a task's label set: NER's entity types and dep's
relations come from the whole training file (``TaskData.full_train``), as cls and RE do."""

from __future__ import annotations

from bertkit.tasks.driver import load_splits
from bertkit.tasks.registry import get_task
from tests.conftest import write_ner_dir

CHEM = "Aspirin\tB-Chemical\ninduced\tO\n.\tO\n"
DIS = "Renal\tB-Disease\nfailure\tI-Disease\n.\tO\n"


def test_ner_labels_from_the_whole_training_file(tmp_path):
    task = get_task("ner")
    data_dir = write_ner_dir(tmp_path / "d", train="\n".join([CHEM, CHEM, DIS]),
                             dev="\n".join([DIS, CHEM]), test=DIS)
    cfg = task.config_class(data=str(data_dir), max_train_samples=2)
    data = load_splits(task, cfg)
    assert len(data.splits["train"]) == 2 and len(data.full_train) == 3
    from bertkit.tasks.ner.data import entity_types  # the types the label set is built from

    assert sorted(entity_types(data.splits["train"])) == ["Chemical"]
    assert sorted(entity_types(data.full_train)) == ["Chemical", "Disease"]


def test_finetune_ner_sample_keeps_every_label(tmp_path, tiny_encoder):
    import json

    from typer.testing import CliRunner

    from bertkit.cli import app

    data_dir = write_ner_dir(tmp_path / "d", train="\n".join([CHEM, CHEM, DIS]),
                             dev="\n".join([DIS, CHEM]), test=DIS)
    run = tmp_path / "run"
    res = CliRunner().invoke(app, ["finetune", "ner", "--data", str(data_dir), "--model",
                                   tiny_encoder, "-o", str(run), "--device", "cpu", "--epochs",
                                   "1", "--max-train-samples", "2"])
    assert res.exit_code == 0, res.output
    labels = json.loads((run / "model" / "config.json").read_text())["id2label"].values()
    assert {"B-Disease", "I-Disease", "B-Chemical"} <= set(labels)
    assert "not in train" not in " ".join(res.output.split())


def test_dep_relations_from_the_whole_training_file(tmp_path):
    from bertkit.tasks.dep.data import relations
    from tests.tasks.dep.conftest import write_dep_dir

    task = get_task("dep")
    data_dir = write_dep_dir(tmp_path / "d")
    cfg = task.config_class(data=str(data_dir), max_train_samples=1)
    data = load_splits(task, cfg)
    assert len(data.splits["train"]) == 1 and len(data.full_train) > 1
    assert set(relations(data.splits["train"])) <= set(relations(data.full_train))
