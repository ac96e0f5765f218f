"""The one error type users see: a message naming the file, the line and what was expected.

The CLI turns a :class:`BertkitError` into a red message and exit code 1, never a traceback.
"""

from __future__ import annotations

from pathlib import Path


class BertkitError(Exception):
    """A problem with the user's input or settings.

    Args:
        message: what went wrong, in the user's terms.
        file: the file at fault, if any.
        line: 1-based line number in ``file``, if known.
        expected: what bertkit expected to find instead.
        exit_code: the process exit status the CLI uses (1; 130/143 for a run stopped by
            SIGINT/SIGTERM after saving its checkpoint).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        expected: str | None = None,
        exit_code: int = 1,
    ) -> None:
        self.message = message
        self.exit_code = exit_code
        self.file = str(file) if file is not None else None
        self.line = line
        self.expected = expected
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = f"{self.file}:{self.line}: " if self.line is not None else f"{self.file}: "
        text = f"{where}{self.message}"
        if self.expected:
            text += f" (expected {self.expected})"
        return text
