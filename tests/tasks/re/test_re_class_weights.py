"""finetune re --class-weights balanced: weighted cross-entropy with the weights cls uses."""

import json

import pytest
import torch
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.tasks.common import balanced_weights, class_weights
from bertkit.tasks.re import REConfig
from bertkit.tasks.re.model import WeightedRelationLoss, unwrap
from tests.tasks.re.conftest import PAIRS, write_re_dir

runner = CliRunner()


class _Logits(torch.nn.Module):
    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, input_ids=None, **_):
        from types import SimpleNamespace

        return SimpleNamespace(logits=self.logits)


def test_weighted_loss_is_torch_weighted_cross_entropy():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0], [0.0, 0.0, 3.0]])
    labels = torch.tensor([0, 1, 1])
    weight = balanced_weights([4, 1, 1])  # N=6, C=3: 0.5, 2, 2
    assert weight.tolist() == [0.5, 2.0, 2.0]
    inner = _Logits(logits)
    wrapped = WeightedRelationLoss(inner, weight)
    out = wrapped(input_ids=None, labels=labels)
    ce = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
    expected = (0.5 * ce[0] + 2 * ce[1] + 2 * ce[2]) / (0.5 + 2 + 2)
    assert out["loss"].item() == pytest.approx(expected.item())
    assert torch.equal(out["logits"], logits)
    assert unwrap(wrapped) is inner and unwrap(inner) is inner


def test_class_weights_from_training_labels():
    xs = [type("X", (), {"label": lab})() for lab in ("a", "a", "a", "b")]
    assert class_weights("none", ["a", "b"], xs) is None
    assert class_weights("balanced", ["a", "b", "c"], xs).tolist() == \
        pytest.approx([4 / (2 * 3), 4 / (2 * 1), 0.0])


def test_class_weights_option_checked():
    from bertkit.errors import BertkitError

    with pytest.raises(BertkitError, match=r"--class-weights is 'inverse' \(expected none or "
                                           r"balanced\)"):
        REConfig(class_weights="inverse").validate()


def test_cli_finetune_re_balanced_runs_saves_and_evaluates(tmp_path, tiny_encoder):
    d = write_re_dir(tmp_path / "d", train=PAIRS + [("<< a >> and [[ b ]] .", "no_relation")] * 2)
    run_dir = tmp_path / "run"
    res = runner.invoke(app, ["finetune", "re", "--data", str(d), "--model", tiny_encoder,
                              "-o", str(run_dir), "--epochs", "1", "--batch-size", "4",
                              "--device", "cpu", "--class-weights", "balanced"])
    assert res.exit_code == 0, res.output
    results = json.loads((run_dir / "results.json").read_text())
    assert results["class_weights"] == "balanced"
    assert "class weights balanced" in " ".join(res.output.split())
    assert "class_weights: balanced" in (run_dir / "config.yaml").read_text()
    meta = json.loads((run_dir / "model" / "bertkit.json").read_text())
    assert meta["task"] == "re" and meta["pooling"] == "cls"
    res = runner.invoke(app, ["evaluate", "re", "-m", str(run_dir), "--data", str(d),
                              "--device", "cpu", "--output", str(tmp_path / "m.json")])
    assert res.exit_code == 0, res.output
    scored = json.loads((tmp_path / "m.json").read_text())  # same model, same test file
    assert scored["micro_f1"] == pytest.approx(results["test"]["micro_f1"])
    bad = runner.invoke(app, ["finetune", "re", "--data", str(d), "--model", tiny_encoder,
                              "-o", str(tmp_path / "bad"), "--class-weights", "inverse"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output  # a Choice option
    assert "'inverse' is not one of 'none', 'balanced'" in " ".join(
        bad.output.replace("│", " ").split())
