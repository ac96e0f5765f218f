"""Training progress: the bar draws only on a terminal (make_progress); into a file, plain lines
(PlainProgress)."""

import io

from rich.console import Console

from bertkit.training.logging import PlainProgress, make_progress


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


def _record(step, **extra):
    return {"type": "train", "step": step, "epoch": 1, "loss": 0.5, "mlm_loss": 0.25, "lr": 1e-4,
            "examples_per_s": 12.0, "tokens_per_s": 900.0, **extra}


def test_plain_progress_lines_into_a_file(monkeypatch):
    """Into a file the bar is off, so a plain line reports the step, losses, pace and ETA, at
    most one every ``interval`` seconds; on a terminal (the bar draws) nothing is printed."""
    clock = iter([100.0, 110.0, 120.0, 125.0, 160.0])  # start, then one call per line()
    monkeypatch.setattr("bertkit.training.logging.time.monotonic", lambda: next(clock))
    to_file = Console(file=io.StringIO(), force_terminal=False)
    plain = PlainProgress(to_file, total_steps=40, n_epochs=2, start_step=0, interval=30.0)
    first = plain.line(_record(10))  # 10 s for 10 steps: 30 steps left take 30 s
    assert first == ("step 10/40 (epoch 1/2): loss 0.5000, mlm_loss 0.2500, 12.0 ex/s, "
                     "elapsed 0:10, ETA 0:30")
    assert plain.line(None) is None  # no record (nothing since the last flush)
    assert plain.line(_record(20)) is None  # 15 s after the first line: too soon
    third = plain.line(_record(30))  # 60 s for 30 steps, 10 left
    assert third.startswith("step 30/40 ") and third.endswith("elapsed 1:00, ETA 0:20")
    assert to_file.file.getvalue().splitlines() == [first, third]


def test_plain_progress_silent_on_a_terminal_and_eta_after_resume(monkeypatch):
    monkeypatch.setattr("bertkit.training.logging.time.monotonic", lambda: 50.0)
    terminal = Console(file=io.StringIO(), force_terminal=True, width=80)
    assert PlainProgress(terminal, 40, 2).line(_record(10)) is None
    assert PlainProgress(None, 40, 2).line(_record(10)) is None
    assert terminal.file.getvalue() == ""
    clock = iter([0.0, 3720.0])
    monkeypatch.setattr("bertkit.training.logging.time.monotonic", lambda: next(clock))
    to_file = Console(file=io.StringIO(), force_terminal=False)
    resumed = PlainProgress(to_file, total_steps=100, n_epochs=1, start_step=40)
    # 2 steps since the resume at step 40 took 62 min: 58 left take 29:58:00
    assert resumed.line(_record(42)).endswith("elapsed 1:02:00, ETA 29:58:00")
