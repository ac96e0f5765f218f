"""The training progress bar draws only on a terminal (bertkit.training.logging.make_progress)."""

import io

from rich.console import Console

from bertkit.training.logging import make_progress


def test_progress_bar_only_on_a_terminal():
    to_file = Console(file=io.StringIO(), force_terminal=False)
    terminal = Console(file=io.StringIO(), force_terminal=True, width=80)
    assert make_progress(to_file).disable
    assert make_progress(None).disable
    assert make_progress(terminal, disable=True).disable
    bar = make_progress(terminal)
    assert not bar.disable
    with bar:
        bar.add_task("train", total=4, completed=1, rate="3.0 it/s")
    assert "1/4" in terminal.file.getvalue()
    with make_progress(to_file) as quiet:  # into a file: nothing printed, not even at the end
        quiet.add_task("train", total=4, completed=1, rate="")
    assert to_file.file.getvalue() == ""
