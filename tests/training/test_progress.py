"""Training progress: the bar draws only on a terminal (make_progress); into a file, plain lines
(PlainProgress)."""

import io

from rich.console import Console

from bertkit.training.logging import PlainProgress, StepProgress, make_progress


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


class _Meter:
    def __init__(self, losses, rate=12.0):
        self.losses, self.pace, self.reads = losses, rate, 0

    def means(self):
        self.reads += 1
        return self.losses

    def rate(self):
        return self.pace


def test_plain_progress_lines_into_a_file(monkeypatch):
    """Into a file the bar is off, so a plain line reports the step, losses, pace and ETA every
    ``interval`` seconds, whatever the logging steps; on a terminal nothing is printed."""
    clock = iter([100.0, 110.0, 131.0, 140.0, 165.0])  # start, then one call per update()
    monkeypatch.setattr("bertkit.training.logging.time.monotonic", lambda: next(clock))
    to_file = Console(file=io.StringIO(), force_terminal=False)
    plain = PlainProgress(to_file, total_steps=40, n_epochs=2, start_step=0, interval=30.0)
    meter = _Meter({"loss": 0.5, "mlm_loss": 0.25, "lr": 1e-4})
    assert plain.update(10, 1, meter) is None  # 10 s after the start: too soon
    assert meter.reads == 0  # the meter is read only for a line
    first = plain.update(20, 1, meter)  # 31 s for 20 steps: 20 left take 31 s
    assert first == ("step 20/40 (epoch 1/2): loss 0.5000, mlm_loss 0.2500, 12.0 ex/s, "
                     "elapsed 0:31, ETA 0:31")
    assert plain.update(30, 2, meter) is None  # 9 s after the first line
    second = plain.update(39, 2, _Meter({}))  # 65 s for 39 steps; no batch since the last record
    assert second == "step 39/40 (epoch 2/2): 12.0 ex/s, elapsed 1:05, ETA 0:02"
    assert to_file.file.getvalue().splitlines() == [first, second]


def test_plain_progress_silent_on_a_terminal_and_eta_after_resume(monkeypatch):
    monkeypatch.setattr("bertkit.training.logging.time.monotonic", lambda: 50.0)
    terminal = Console(file=io.StringIO(), force_terminal=True, width=80)
    assert PlainProgress(terminal, 40, 2, interval=0).update(10, 1, _Meter({})) is None
    assert PlainProgress(None, 40, 2, interval=0).update(10, 1, _Meter({})) is None
    assert terminal.file.getvalue() == ""
    clock = iter([0.0, 3720.0])
    monkeypatch.setattr("bertkit.training.logging.time.monotonic", lambda: next(clock))
    to_file = Console(file=io.StringIO(), force_terminal=False)
    resumed = PlainProgress(to_file, total_steps=100, n_epochs=1, start_step=40)
    # 2 steps since the resume at step 40 took 62 min: 58 left take 29:58:00
    assert resumed.update(42, 1, _Meter({"loss": 1.0})).endswith(
        "elapsed 1:02:00, ETA 29:58:00")


def test_step_progress_draws_the_bar_from_the_resume_step_or_prints_plain_lines(monkeypatch):
    """The loop's one progress display: on a terminal the bar (from a resume's step, with the
    pace); into a file a plain line when one is due; off the main process (None) nothing."""
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    with StepProgress(terminal, total_steps=10, n_epochs=1, start_step=4) as progress:
        progress.update(5, 1, _Meter({"loss": 1.0}, rate=7.5))
        task = progress.bar.tasks[0]
        assert (task.completed, task.total, task.fields["rate"]) == (5, 10, "7.5 ex/s")
    assert "5/10" in terminal.file.getvalue()
    to_file = Console(file=io.StringIO(), force_terminal=False)
    with StepProgress(to_file, total_steps=10, n_epochs=1) as progress:
        progress.plain.start = progress.plain.last = 0.0
        monkeypatch.setattr("bertkit.training.logging.time.monotonic", lambda: 40.0)
        progress.update(1, 1, _Meter({"loss": 1.0}))  # 40 s after the start: a line is due
    assert to_file.file.getvalue() == ("step 1/10 (epoch 1/1): loss 1.0000, 12.0 ex/s, "
                                       "elapsed 0:40, ETA 6:00\n")
    with StepProgress(None, total_steps=10, n_epochs=1) as progress:
        progress.update(1, 1, _Meter({}))
        assert progress.bar.disable and progress.plain.console is None
