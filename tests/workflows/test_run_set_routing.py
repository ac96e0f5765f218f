"""``bertkit run --set key=value``: routed to the stages whose command has the key, typed by the
setting it sets; a key no stage has is a clear message (issue 31)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bertkit.errors import BertkitError

runner = CliRunner()


# --- bertkit run --set: routed to the stages that have the key, typed by the setting ----------

def _two_stage(tmp_path):
    from bertkit.workflows import recipes

    path = tmp_path / "two.yaml"
    path.write_text("stages:\n"
                    "  - {name: vocab, command: vocab build, settings: {corpus: c.txt}}\n"
                    "  - {name: pre, command: pretrain, settings: {vocab: '@vocab'}}\n"
                    "  - {name: ft, command: finetune re, settings: {model: '@pre'}}\n")
    return recipes.load(path)


def test_set_goes_to_the_stages_that_have_the_key(tmp_path):
    from bertkit.workflows.recipes import apply_overrides

    rec = apply_overrides(_two_stage(tmp_path), ["max_steps=100", "size=500", "lr=3e-5"])
    vocab, pre, ft = (s.settings for s in rec.stages)
    assert vocab == {"corpus": "c.txt", "size": 500}  # vocab build has no max_steps or lr
    assert pre["max_steps"] == 100 and pre["lr"] == 3e-5 and "size" not in pre
    assert ft["lr"] == 3e-5 and ft["max_steps"] == 100
    rec = apply_overrides(_two_stage(tmp_path), ["pre.lr=1e-4"])
    assert rec.stages[1].settings["lr"] == 1e-4 and "lr" not in rec.stages[2].settings


@pytest.mark.parametrize("item, message", [
    ("learning_rate=1e-4", r"no stage of recipe two has a setting 'learning_rate'.*stage vocab "
                           r"\(vocab build\): .*size.*stage pre \(pretrain\): .*masking"),
    ("vocab.lr=1e-4", r"stage vocab has no setting 'lr'.*a setting of stage vocab \(vocab "
                      r"build\): .*min_frequency"),
])
def test_set_of_a_key_no_stage_has_is_a_clear_message(tmp_path, item, message):
    from bertkit.workflows.recipes import apply_overrides

    with pytest.raises(BertkitError, match=message) as err:
        apply_overrides(_two_stage(tmp_path), [item])
    assert "TypeError" not in str(err.value) and "unexpected keyword" not in str(err.value)


def test_run_cli_set_with_an_unknown_key_exits_1_naming_the_keys(tmp_path):
    from bertkit.cli import app

    _two_stage(tmp_path)
    res = runner.invoke(app, ["run", str(tmp_path / "two.yaml"), "--set", "nope=1",
                              "-o", str(tmp_path / "out")])
    assert res.exit_code == 1 and "has a setting 'nope'" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()


def test_set_values_keep_the_declared_type_and_quotes_force_text(tmp_path):
    from bertkit.settings.layers import build_config
    from bertkit.workflows.recipes import apply_overrides
    from bertkit.tasks.re.config import REConfig

    rec = apply_overrides(_two_stage(tmp_path), [
        "ft.negative_label=1", "ft.seeds=1,2", "pre.masking='1'", "ft.lr='2e-5'",
        "ft.typed_markers=true", "ft.epochs=2", 'vocab.corpus="3"'])
    ft = rec.stages[2].settings
    assert ft["negative_label"] == "1" and ft["seeds"] == "1,2"  # text settings stay text
    assert rec.stages[1].settings["masking"] == "1" and rec.stages[0].settings["corpus"] == "3"
    assert ft["typed_markers"] is True and ft["epochs"] == 2
    assert ft["lr"] == "2e-5"  # quoted: text (build_config reads a number from it)
    cfg = build_config(REConfig, {k: v for k, v in ft.items() if k not in ("lr", "model")})
    assert cfg.negative_label == "1"
