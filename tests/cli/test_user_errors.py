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
