"""Where a streaming ``predict`` writes: a file (through gzip for a ``.gz`` name, one member
a chunk) synced to disk after every chunk, before the state says it is there, or a text stream
(standard output)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import IO


class Sink:
    """Appends chunks to a file (through gzip, one member a chunk, for a ``.gz`` name) or a
    text stream; ``offset`` is the bytes written."""

    def __init__(self, target: Path | IO[str], offset: int = 0) -> None:
        self.offset = offset
        self.stream = None if isinstance(target, Path) else target
        self.handle = None
        if isinstance(target, Path):
            self.gz = target.name.endswith(".gz") or target.name.endswith(".gz.part")
            target.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(target, "r+b" if target.exists() else "wb")
            self.handle.truncate(offset)  # whole records only: a half-written one goes
            self.handle.seek(offset)

    def write_bytes(self, data: bytes) -> tuple[int, int]:
        """Append ``data`` as it is (a file target only) and sync it to disk."""
        start = self.offset
        self.handle.write(data)
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.offset += len(data)
        return start, self.offset

    def write(self, text: str) -> tuple[int, int]:
        """Append ``text`` (UTF-8; a gzip member of its own for a ``.gz`` file) and sync it to
        disk; the ``(start, end)`` byte range it took."""
        start = self.offset
        if self.stream is not None:
            self.stream.write(text)
            self.stream.flush()
            self.offset += len(text)
            return start, self.offset
        data = text.encode("utf-8")
        if self.gz and data:
            data = gzip.compress(data, mtime=0)
        self.handle.write(data)
        self.handle.flush()
        os.fsync(self.handle.fileno())  # on disk before the state says so
        self.offset += len(data)
        return start, self.offset

    def close(self) -> None:
        """Close the file (a stream stays open)."""
        if self.handle is not None:
            self.handle.close()
