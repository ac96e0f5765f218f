"""Graceful stops: SIGINT (Ctrl-C) and SIGTERM (a scheduler's pre-emption) request a stop that the
training loop honours at the next optimiser step, after writing a checkpoint."""

from __future__ import annotations

import signal
import threading
from types import FrameType


class StopRequest:
    """Context manager catching SIGINT and SIGTERM while training.

    The first signal sets :attr:`signal_name`; the loop checks :attr:`requested` after each
    optimiser step, saves a checkpoint and stops. A second signal restores the default handler
    behaviour (an immediate ``KeyboardInterrupt`` for SIGINT, termination for SIGTERM). Outside the
    main thread (where handlers cannot be installed) it does nothing.
    """

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._old: dict[int, object] = {}

    @property
    def requested(self) -> bool:
        """True once a stop signal arrived."""
        return self.signal_name is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:  # second signal: give up gracefully stopping
            old = self._old.get(signum, signal.SIG_DFL)
            signal.signal(signum, old if callable(old) or old in (signal.SIG_DFL, signal.SIG_IGN)
                          else signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        self.signal_name = signal.Signals(signum).name

    def __enter__(self) -> "StopRequest":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()
