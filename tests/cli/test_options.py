"""The shared training options: declared once, on every training command, with --help defaults
that are the task configs' real defaults."""

import inspect
import re
import typing
from dataclasses import fields

import pytest

from bertkit.cli import finetune, pretrain
from bertkit.cli._options import LOOP_OPTIONS
from bertkit.tasks.dep import DepConfig
from bertkit.tasks.ner import NERConfig
from bertkit.tasks.pretrain import PretrainConfig
from bertkit.tasks.re import REConfig

COMMANDS = [(finetune.COMMANDS["ner"], NERConfig), (finetune.COMMANDS["re"], REConfig),
            (finetune.COMMANDS["dep"], DepConfig), (pretrain.pretrain_cli, PretrainConfig)]


def _shown_default(param) -> str | None:
    info = typing.get_args(param.annotation)[1]
    found = re.search(r"\[default: ([^\]]+)\]", info.help or "")
    return found.group(1) if found else None


@pytest.mark.parametrize("command, config", COMMANDS)
def test_loop_options_present_with_true_defaults(command, config):
    params = inspect.signature(command).parameters
    defaults = {f.name: f.default for f in fields(config)}
    for name in LOOP_OPTIONS:
        if name == "epochs" and config is PretrainConfig:
            assert name not in params  # pretraining counts steps
            continue
        assert name in params, f"{command.__name__} lacks --{name}"
        shown = _shown_default(params[name])
        if shown is None or name == "output_dir":
            continue
        real = defaults[name]
        expected = ("fsdp" if real else "no-fsdp") if name == "fsdp" else str(real)
        assert shown == expected or float(shown) == pytest.approx(float(real)), (name, shown, real)
    assert list(params)[-1] == "recipe"  # --recipe stays last in --help


def test_shared_flags_reach_the_config(tmp_path, monkeypatch):
    """--fsdp, --skip-nonfinite and --report-to end up in the resolved settings."""
    from typer.testing import CliRunner

    from bertkit.cli import app
    import bertkit.tasks.ner as ner

    seen = {}

    def fake_finetune(cfg, console=None):
        seen["cfg"] = cfg
        return {}

    monkeypatch.setattr(ner, "finetune_ner", fake_finetune)
    result = CliRunner().invoke(app, ["finetune", "ner", "--fsdp", "--skip-nonfinite", "3",
                                      "--report-to", "tensorboard", "--epochs", "2"])
    assert result.exit_code == 0, result.output
    cfg = seen["cfg"]
    assert (cfg.fsdp, cfg.skip_nonfinite, cfg.report_to, cfg.epochs) == (True, 3, "tensorboard", 2)
