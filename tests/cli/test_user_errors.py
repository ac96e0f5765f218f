"""The CLI's error wrapper: a Ctrl-C outside a training loop says so (it ended silently)."""

from __future__ import annotations

import pytest
import typer

from bertkit.cli._app import user_errors
from bertkit.errors import BertkitError


def test_ctrl_c_prints_a_line_and_exits_130(capsys):
    @user_errors
    def command():
        raise KeyboardInterrupt

    with pytest.raises(typer.Exit) as err:
        command()
    assert err.value.exit_code == 130
    assert capsys.readouterr().err == "bertkit: interrupted (Ctrl-C)\n"


def test_a_user_error_still_names_its_file_and_exits_1(capsys):
    @user_errors
    def command():
        raise BertkitError("bad", file="x.txt", line=3)

    with pytest.raises(typer.Exit) as err:
        command()
    assert err.value.exit_code == 1 and "x.txt:3: bad" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["pretrain", "--masking", "span"], "error: no --corpus given"),  # issue 46: was Error:
    (["vocab", "extend", "-m", "minilm", "-o", "x"], "error: Missing option '--add' / '-n'."),
    (["vocab", "compare"], "error: Missing argument 'vocab_a'."),
    (["finetune", "ner", "--epochs", "0"], "error: Invalid value for '--epochs'"),
    (["finetune", "ner", "--nope"], "error: No such option: --nope"),
    (["bench", "run", "s", "-e", "a=minilm", "-o", "x", "--budget", "half"],
     "error: Invalid value for '--budget'"),
    (["nosuch"], "error: No such command 'nosuch'."),
])
def test_every_message_starts_with_the_same_error_prefix(args, message, tmp_path, monkeypatch):
    """Issue 46: a usage error (click's) and a user error (bertkit's) both print ``error: ...``,
    never typer's boxed "Error" panel nor "Error:"."""
    from typer.testing import CliRunner

    from bertkit.cli import app

    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, args)
    assert res.exit_code in (1, 2), res.output
    lines = [line for line in res.output.splitlines() if "rror" in line]
    assert lines and lines[0].startswith(message), res.output
    assert "Error" not in res.output and "Traceback" not in res.output
