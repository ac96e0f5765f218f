"""Options with a fixed set of values are Choice options: the command line refuses another value
(exit 2, the choices named) before anything runs, and the CLI's lists equal the library's."""

from __future__ import annotations

import typing

import pytest
from typer.testing import CliRunner

from bertkit.cli import _options as opt
from bertkit.cli import app

runner = CliRunner()


def _choices(config, name):
    from bertkit.settings.options import field_options

    return next(o.choices for o in field_options(config) if o.name == name)


def test_choice_lists_equal_the_library_constants():
    from bertkit.heads.relation import POOLINGS
    from bertkit.tasks.cls.config import LONG_TEXT, CLSConfig
    from bertkit.tasks.dep.config import DECODER_NAMES, WORD_REPRS, DepConfig
    from bertkit.tasks.dep.model import DECODERS
    from bertkit.tasks.ner.config import METRICS, NERConfig
    from bertkit.tasks.re.config import REConfig

    for shown, library in ((_choices(DepConfig, "decoder"), tuple(DECODERS)),
                           (_choices(DepConfig, "word_repr"), WORD_REPRS),
                           (_choices(NERConfig, "metric"), tuple(METRICS)),
                           (_choices(REConfig, "pooling"), POOLINGS),
                           (_choices(CLSConfig, "long_text"), LONG_TEXT)):
        assert tuple(shown) == tuple(library)
    assert tuple(DECODERS) == DECODER_NAMES  # the decoders and the config's light list of names


def test_split_and_model_size_choices_equal_the_library():
    from bertkit.settings.options import SPLIT
    from bertkit.tasks.common import SPLIT_NAMES
    from bertkit.tasks.pretrain.model import SIZES

    assert typing.get_args(opt.ModelSize) == tuple(SIZES)
    assert set(SPLIT.choices) == {"train", "dev", "test"} | set(SPLIT_NAMES)


def test_the_command_line_imports_no_task_model_code():
    """The task packages export lazily, so the CLI's choice lists come from the light config
    modules without the model code (each task is imported when its command runs)."""
    import subprocess
    import sys

    code = ("import sys, bertkit.cli; print(sorted(m for m in sys.modules if m.startswith("
            "'bertkit.tasks.') and m.endswith(('.task', '.model'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("command, option, choices", [
    (["pretrain"], "--masking", "'token', 'wwm', 'span'"),
    (["adapt"], "--masking", "'token', 'wwm', 'span'"),
    (["adapt"], "--precision", "'auto', 'fp32', 'bf16', 'fp16'"),
    (["finetune", "ner"], "--metric", "'span', 'token-macro'"),
    (["finetune", "re"], "--pooling", "'cls', 'entity-start'"),
    (["finetune", "re"], "--class-weights", "'none', 'balanced'"),
    (["finetune", "cls"], "--class-weights", "'none', 'balanced'"),
    (["finetune", "cls"], "--long-text", "'head-tail', 'windows'"),
    (["finetune", "dep"], "--word-repr", "'first', 'mean'"),
    (["finetune", "dep"], "--decoder", "'mst', 'eisner'"),
    (["evaluate", "dep"], "--decoder", "'mst', 'eisner'"),
    (["predict", "dep"], "--decoder", "'mst', 'eisner'"),
    (["vocab", "build"], "--algorithm", "'wordpiece', 'sentencepiece'"),
    (["vocab", "build"], "--normalize", "'none', 'nfc', 'nfkc', 'nfd', 'nfkd'"),
])
def test_other_values_are_refused_by_the_command_line(command, option, choices, tmp_path):
    out = ["-o", str(tmp_path / "run")] if command[0] in ("pretrain", "finetune") else []
    res = runner.invoke(app, [*command, option, "bogus", *out])
    text = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2, text
    assert f"Invalid value for '{option}'" in text and f"'bogus' is not one of {choices}" in text
    assert "Value error" not in text  # pydantic's prefix, dropped by cli/_app.py
    assert not (tmp_path / "run").exists()


def test_normalize_is_case_insensitive():
    res = runner.invoke(app, ["vocab", "build", "--normalize", "NFKC", "--corpus", "/nonexistent",
                              "--out", "/nonexistent-out"])
    text = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 1 and "Invalid value" not in text  # past parsing: the corpus is missing
