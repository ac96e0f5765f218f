"""``evaluate``'s shared body writes the same prediction lines and confusion matrix as a run's
test split (same model, same test split): cls single- and multi-label, re."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from tests.tasks.cls.conftest import TEXTS, write_cls_dir
from tests.tasks.re.conftest import write_re_dir

runner = CliRunner()


def finetune_then_evaluate(task, data, encoder, run, out, *extra):
    """Fine-tune ``task`` one epoch from ``encoder`` into ``run``, then evaluate its test split
    writing ``out/p.jsonl`` and ``out/cm.{csv,png}``; the prediction lines must be the run's.
    In fp32: bf16 autocast (the default on a CPU with AMX-BF16) rounds differently with other
    batch shapes, and evaluate batches the test split otherwise than fine-tuning does."""
    res = runner.invoke(app, ["finetune", task, "--data", str(data), "-m", encoder, "-o",
                              str(run), "--epochs", "1", "--batch-size", "2", "--device", "cpu",
                              "--precision", "fp32", *extra])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["evaluate", task, "-m", str(run), "--data", str(data), "--split",
                              "test", "--device", "cpu", "--precision", "fp32",
                              "--predictions", str(out / "p.jsonl"), "--confusion", str(out / "cm")])
    assert res.exit_code == 0, res.output
    assert (out / "p.jsonl").read_text() == (run / "test_predictions.jsonl").read_text()


@pytest.mark.parametrize("multi_label", [False, True])
def test_evaluate_cls_writes_the_files_finetune_wrote(tmp_path, tiny_encoder, multi_label):
    d = write_cls_dir(tmp_path / "d")
    if multi_label:  # a multi-label model has no confusion matrix
        rows = [{"text": t, "label": [lab] + (["Cites"] if i % 2 else [])}
                for i, (t, lab) in enumerate(TEXTS)]
        for split in ("train", "dev", "test"):
            (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    finetune_then_evaluate("cls", d, tiny_encoder, run, tmp_path, *(["--multi-label"] if multi_label else []))
    if multi_label:
        assert not (tmp_path / "cm.csv").exists() and not (run / "test_confusion.csv").exists()
    else:
        assert (tmp_path / "cm.csv").read_text() == (run / "test_confusion.csv").read_text()
        assert (tmp_path / "cm.png").read_bytes()[:4] == b"\x89PNG"


def test_evaluate_re_writes_the_files_finetune_wrote(tmp_path, tiny_encoder):
    run = tmp_path / "run"
    finetune_then_evaluate("re", write_re_dir(tmp_path / "d"), tiny_encoder, run, tmp_path)
    assert (tmp_path / "cm.csv").read_text() == (run / "test_confusion.csv").read_text()
