"""TAPT text from classification files (JSON lines, CSV) and ID<TAB>TEXT files, and ``adapt
--task cls`` from end to end (issue 31)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bertkit.errors import BertkitError

runner = CliRunner()


# --- TAPT text from classification files and ID<TAB>TEXT files; adapt --task cls ---------------

def test_task_text_from_a_classification_jsonl_csv_and_id_tab_text(tmp_path):
    from bertkit.workflows.task_text import task_text_lines

    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text('{"text": "Cells were grown as described [3].", "label": "method"}\n'
                     '{"text": "We compare with earlier work.", "label": "background"}\n')
    assert task_text_lines(str(jsonl)) == ["Cells were grown as described [3].",
                                           "We compare with earlier work."]
    csv = tmp_path / "t.csv"
    csv.write_text('label,text\nx,"One text, with a comma."\ny,Two texts\n')
    assert task_text_lines(str(csv)) == ["One text, with a comma.", "Two texts"]
    tabbed = tmp_path / "abstracts.tsv"
    tabbed.write_text("id\ttext\nP1\tAspirin induced renal failure .\nP2\tB-cell lines grew .\n")
    assert task_text_lines(str(tabbed)) == ["Aspirin induced renal failure .",
                                            "B-cell lines grew ."]
    plain_ids = tmp_path / "ids.txt"
    plain_ids.write_text("1\tA first sentence here .\n2\tA second one .\n")
    assert task_text_lines(str(plain_ids)) == ["A first sentence here .", "A second one ."]


def test_task_text_errors_name_no_option_that_adapt_lacks(tmp_path):
    from bertkit.workflows.task_text import task_text_lines

    bad = tmp_path / "train.jsonl"
    bad.write_text('{"text": "fine", "label": "a"}\n{"label": "b"}\n')
    with pytest.raises(BertkitError) as err:
        task_text_lines(str(bad))
    text = str(err.value)
    assert f"{bad}:2:" in text and "--skip-bad-lines" not in text and "--text-column" not in text
    with pytest.raises(BertkitError, match=r"cls:DATA.*classification JSONL"):
        task_text_lines("pos:x")


def test_task_text_of_a_registered_classification_set(tmp_path, monkeypatch):
    from bertkit.workflows.task_text import task_text_lines

    folder = tmp_path / "cls" / "scicite"
    folder.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (folder / f"{split}.jsonl").write_text(
            f'{{"text": "A {split} text.", "label": "a"}}\n'
            f'{{"text": "A {split} text.", "label": "b"}}\n')
    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path))
    assert task_text_lines("cls:scicite") == ["A train text."]  # train only, each text once


def test_adapt_cli_takes_task_cls_and_refuses_other_tasks_as_a_choice(tmp_path):
    from bertkit.cli import app

    res = runner.invoke(app, ["adapt", "--task", "pos", "--task-text", "task"])
    assert res.exit_code == 2 and "pos" in res.output
    from bertkit.workflows.adapt import AdaptConfig
    from bertkit.workflows.scores import task_metrics

    AdaptConfig(task="cls", data="scicite", task_text="cls:scicite").validate()
    assert task_metrics("cls")[0][0] == "macro_f1"


@pytest.mark.slow
def test_adapt_task_cls_end_to_end(tiny_encoder, tmp_path):
    import json

    from bertkit.cli import app

    data = tmp_path / "cls"
    data.mkdir()
    rows = ["Cells were grown as described .", "We compare with earlier work .",
            "Results agree with the model .", "Samples were stained as before ."]
    for split in ("train", "dev", "test"):
        (data / f"{split}.jsonl").write_text("".join(
            json.dumps({"text": t, "label": "ab"[i % 2]}) + "\n" for i, t in enumerate(rows)))
    out = tmp_path / "run"
    res = runner.invoke(app, [
        "adapt", "--task", "cls", "--model", tiny_encoder, "--data", str(data),
        "--task-text", f"cls:{data}", "--max-seq-length", "8", "--pretrain-batch-size", "2",
        "--masking", "token", "--tapt-epochs", "1", "--epochs", "1", "--batch-size", "2",
        "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stages"]["task_text"]["sentences"] == 4
    assert 0 <= summary["adapted"]["macro_f1"]["mean"] <= 100
