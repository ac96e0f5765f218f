"""One progress line for a whole suite: stages done of all, kept, failed, elapsed and ETA."""

from __future__ import annotations

import time


class Progress:
    """A context manager showing ``bench SUITE  7/30 stages (4 kept, 0 failed)  ETA 0:12:30``.

    The ETA counts only stages run in this session (kept ones cost nothing): the mean wall time
    per finished stage so far times the stages left. With a console that is not a terminal the
    line is printed once per finished stage instead of redrawn.
    """

    def __init__(self, suite: str, total: int, console=None):
        self.suite, self.total, self.console = suite, total, console
        self.n_kept = self.n_done = self.n_failed = 0
        self.start = time.time()
        self.live = None

    def __enter__(self) -> "Progress":
        if self.console is not None and self.console.is_terminal:
            from rich.live import Live

            self.live = Live(self.line(), console=self.console, refresh_per_second=1,
                             transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.update(self.line())
            self.live.__exit__(*exc)

    def line(self) -> str:
        done = self.n_kept + self.n_done + self.n_failed
        left = self.total - done
        elapsed = time.time() - self.start
        eta = "-"
        if self.n_done and left:
            eta = _clock(elapsed / (self.n_done + self.n_failed) * left)
        elif not left:
            eta = "done"
        return (f"bench {self.suite}: {done}/{self.total} stages ({self.n_kept} kept, "
                f"{self.n_failed} failed), {_clock(elapsed)} elapsed, ETA {eta}")

    def _show(self) -> None:
        if self.live is not None:
            self.live.update(self.line())
        elif self.console is not None:
            self.console.print(self.line(), highlight=False)

    def kept(self) -> None:
        self.n_kept += 1
        if self.live is not None:
            self.live.update(self.line())

    def finished(self) -> None:
        self.n_done += 1
        self._show()

    def failed(self, message: str) -> None:
        self.n_failed += 1
        if self.console is not None:
            from rich.markup import escape

            self.console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
        self._show()

    def counts(self) -> dict:
        return {"finished": self.n_done, "kept": self.n_kept, "failed": self.n_failed}


def _clock(seconds: float) -> str:
    """``H:MM:SS``.

    >>> _clock(3725.2)
    '1:02:05'
    """
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
