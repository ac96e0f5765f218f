"""A stand-in for a shard's ``predict`` in a submitit job (importable there by its module name,
unlike a test module): shard 2 fails with a BertkitError, the others write a file."""

from __future__ import annotations

from pathlib import Path

from bertkit.errors import BertkitError


def fake_shard(folder: str, shard: tuple[int, int]) -> None:
    if shard[0] == 2:
        raise BertkitError("made to fail", file=Path(folder, "in.txt"), line=7)
    Path(folder, f"shard-{shard[0]}-of-{shard[1]}").write_text("done")
