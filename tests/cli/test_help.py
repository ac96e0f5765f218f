"""What --help shows, for every command: option names in full at 80 columns, click-style value
types (no ``<str>``/``<bool>``), and defaults that are the config dataclasses' real ones."""

from __future__ import annotations

import dataclasses
import re

import pytest
import typer
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.cli._options import LOOP_OPTIONS, shown_default

runner = CliRunner()


def _commands(cmd=None, path=()):
    cmd = cmd or typer.main.get_command(app)
    subs = getattr(cmd, "commands", None)
    if not subs:
        yield list(path), cmd
        return
    for name, sub in subs.items():
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands())


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_at_80_columns_shows_every_option_name_and_plain_types(path, command):
    out = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}).output
    assert max(len(line) for line in out.splitlines()) <= 80
    names = [o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
    cut = [n for n in names if not re.search(re.escape(n) + r"(?![\w-])", out)]
    assert not cut, f"cut at 80 columns: {cut}"
    assert "\u2026" not in out, "a word too long for its column is cut with an ellipsis"
    assert not re.findall(r"<(?:str|bool|int|float|path)[^>]*>", out)


def test_switches_show_no_type_and_values_show_click_names():
    out = runner.invoke(app, ["finetune", "ner", "--help"], env={"COLUMNS": "120"}).output
    line = next(x for x in out.splitlines() if "--crf" in x)
    assert "BOOL" not in line and "<bool>" not in line
    assert re.search(r"--epochs\s+INT\s", out) and re.search(r"--lr\s+FLOAT\s", out)
    assert re.search(r"--output-dir\s+-o\s+PATH\s", out)


def test_out_of_range_values_are_still_refused_with_the_range():
    res = runner.invoke(app, ["finetune", "ner", "--epochs", "0"])
    assert res.exit_code == 2 and "greater than or equal to 1" in res.output


def _shown(help_text: str | None) -> str | None:
    found = re.search(r"\[default: ([^\]]+)\]", help_text or "")
    return found.group(1) if found else None


def test_help_defaults_are_the_config_defaults():
    """Every ``[default: X]`` of a recipe-able command's option equals its config dataclass's
    default (a default of None is computed at run time and described in words instead)."""
    from bertkit.workflows.recipes import COMMANDS as CONFIGS, _load_attr

    root = typer.main.get_command(app)
    checked = 0
    for name, (cls_spec, _) in CONFIGS.items():
        command = root
        for part in name.split():
            command = command.commands[part]
        fields = {f.name: f.default for f in dataclasses.fields(_load_attr(cls_spec))
                  if f.default is not dataclasses.MISSING}
        for param in command.params:
            shown, real = _shown(param.help), fields.get(param.name)
            if shown is None or real is None:
                continue
            if isinstance(real, bool):
                flags = [o.lstrip("-") for o in (param.opts if real else param.secondary_opts)]
                flags.append(shown_default(param.name, real))  # "untyped" for --untyped-markers
                assert any(f.startswith(shown) for f in flags), (name, param.name, shown, real)
            else:
                value = shown.split(",")[0].strip()  # "0, off"
                assert value == str(real) or float(value) == pytest.approx(float(real)), \
                    (name, param.name, shown, real)
            checked += 1
    assert checked > 30


def test_loop_option_help_defaults_come_from_train_config(monkeypatch):
    from bertkit.training.config import TrainConfig

    assert shown_default("epochs", TrainConfig.epochs) == "3"
    assert shown_default("fsdp", False) == "no-fsdp" and shown_default("resume", False) is None
    assert set(LOOP_OPTIONS) <= {f.name for f in dataclasses.fields(TrainConfig)}


def test_usage_names_arguments_as_click_does():
    """Required arguments read A B, optional ones [MORE]... (typer 0.2x writes {a} {b})."""
    out = " ".join(runner.invoke(app, ["vocab", "compare", "--help"],
                                 env={"COLUMNS": "100"}).output.split())
    assert "Usage: bertkit vocab compare [OPTIONS] VOCAB_A VOCAB_B " in out and "{" not in out
    out = " ".join(runner.invoke(app, ["vocab", "build", "--help"],
                                 env={"COLUMNS": "100"}).output.split())
    assert "Usage: bertkit vocab build [OPTIONS] [MORE]..." in out


def test_description_paragraphs_are_rewrapped_at_80_columns():
    """A docstring's body wrapped at 100 columns in the source reads as one paragraph at 80."""
    out = runner.invoke(app, ["finetune", "dep", "--help"], env={"COLUMNS": "80"}).output
    body = " ".join(out.split())
    assert "test_predictions.conllu and model/ (encoder + tokenizer loadable with" in body
    lines = [line.strip() for line in out.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("Writes a run directory"))
    assert len(lines[start]) >= 60 and len(lines[start + 1]) >= 60  # filled, not cut per line


def test_command_list_rows_are_rewrapped_at_80_columns():
    """A command's first paragraph in its group's list wraps as one paragraph (``bertkit run``'s
    spans several source lines)."""
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "80"}).output
    lines = [line.strip("│ ").strip() for line in out.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("run "))
    assert len(lines[start]) >= 60 and len(lines[start + 1]) >= 50, lines[start:start + 3]


def test_no_help_text_loses_a_bracket_to_rich_markup():
    """Helper trial: ``predict ner --help`` showed ``pip install 'bertkit'``: rich read
    ``[onnx]`` as a style tag. Every help renders to its own text, brackets included."""
    from rich.markup import render

    eaten = []
    for path, command in COMMANDS:
        for p in command.params:
            text = getattr(p, "help", None) or ""
            if render(text).plain != text.replace("\\[", "["):
                eaten.append((" ".join(path), p.name, text))
    assert not eaten, eaten
    out = runner.invoke(app, ["predict", "ner", "--help"], env={"COLUMNS": "200"}).output
    assert "bertkit[onnx]" in out
