"""Progress of a streaming ``predict``: a bar with sentences/s and ETA on a terminal, a plain
line every 30 s when standard error goes to a file (as the training loop's
:class:`~bertkit.training.logging.PlainProgress`)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (BarColumn, Progress, TaskProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from bertkit.training.logging import PLAIN_INTERVAL_S, _clock


class StreamProgress:
    """Progress over the bytes of the input (its stored bytes: a ``.gz`` file's compressed ones).

    Args:
        console: where to show it; None: nowhere.
        total: the input's size in bytes (0: unknown, no ETA).
        unit: what a record is (``sentences``).
        done: records already done (a resume), not counted in the rate.
        interval: seconds between plain lines (None: 30).
    """

    def __init__(self, console: Console | None, total: int, unit: str, done: int = 0,
                 start_bytes: int = 0, interval: float | None = None) -> None:
        self.console, self.total, self.unit = console, total, unit
        self.done0, self.bytes0 = done, start_bytes
        self.interval = PLAIN_INTERVAL_S if interval is None else interval
        self.start = self.last = time.monotonic()
        self.bar = None
        if console is not None and console.is_terminal:
            self.bar = Progress(TextColumn("[bold]predict"), BarColumn(), TaskProgressColumn(),
                                TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                                TextColumn("ETA"), TimeRemainingColumn(), console=console,
                                transient=False)
            self.task = self.bar.add_task("predict", total=total or None,
                                          completed=start_bytes, rate="")
            self.bar.start()

    def rate(self, done: int) -> float:
        """Records per second since the start (those of a resumed run's past left out)."""
        return (done - self.done0) / max(time.monotonic() - self.start, 1e-9)

    def line(self, done: int, position: int) -> str:
        """``120000 sentences (34%), 812.3 sentences/s, elapsed 2:30, ETA 4:50``."""
        elapsed = time.monotonic() - self.start
        part = (position - self.bytes0) / max(self.total - self.bytes0, 1)
        eta = _clock(elapsed / part * (1 - part)) if self.total and part > 0 else "?"
        share = f" ({100 * position / self.total:.0f}%)" if self.total else ""
        return (f"{done} {self.unit}{share}, {self.rate(done):.1f} {self.unit}/s, "
                f"elapsed {_clock(elapsed)}, ETA {eta}")

    def update(self, done: int, position: int) -> str | None:
        """After a chunk: ``done`` records written, ``position`` bytes of the input read. Returns
        the plain line printed, if one was due."""
        if self.bar is not None:
            self.bar.update(self.task, completed=position,
                            rate=f"{self.rate(done):.1f} {self.unit}/s, {done} {self.unit}")
            return None
        now = time.monotonic()
        if self.console is None or now - self.last < self.interval:
            return None
        self.last = now
        text = "predict: " + self.line(done, position)
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)
        return text

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
