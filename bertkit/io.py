"""Atomic file writing: outputs are written to a temporary name and renamed into place.

A crash or a full disk therefore never leaves a half-written ``results.json``, prediction file
or checkpoint behind; the previous version (if any) stays intact until the rename.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from bertkit.errors import BertkitError


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _honour_umask(target: Path) -> None:
    """Give ``target`` (a file or a tree) the modes a plain ``open``/``mkdir`` would: some writers
    (``safetensors``, temporary files) create files readable by their owner only (0600)."""
    mask = _current_umask()
    paths = [target] + (list(target.rglob("*")) if target.is_dir() else [])
    for p in paths:
        if p.is_symlink():
            continue
        os.chmod(p, (0o777 if p.is_dir() else 0o666) & ~mask)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it onto ``path``.

    Works for files and directories: a directory replaces a directory, a file a file; a file is
    never written over an existing directory (that would delete the directory). On error the
    temporary is removed and ``path`` untouched. Files and folders get the modes the umask
    gives (not the owner-only modes of temporary files).

    Raises:
        BertkitError: ``path`` is an existing directory and the payload a file, or a parent of
            ``path`` is a file.
    """
    path = Path(path).expanduser().absolute()
    if not path.name:  # "/" or similar
        raise BertkitError("not a file name", file=path, expected="a path to a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise BertkitError("cannot create the output: a parent of it is a file", file=path,
                           expected="a path whose parent folders are folders") from None
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    target = tmp / "payload"
    try:
        yield target
        if target.exists():
            _honour_umask(target)
        if path.is_dir() and not target.is_dir():
            raise BertkitError("is a directory; bertkit will not replace a directory with a file",
                               file=path, expected="a path to a file")
        if path.is_dir() and not path.is_symlink():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
            os.replace(target, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(target, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically.

    Raises:
        BertkitError: ``path`` is a directory (checked before anything is written).
    """
    if Path(path).expanduser().is_dir():
        raise BertkitError("is a directory; bertkit will not replace a directory with a file",
                           file=Path(path), expected="a path to a file")
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def json_plain(data: Any) -> Any:
    """``data`` as written to JSON and read back: tuples as lists, keys as strings, anything else
    that JSON lacks (paths, enums, ...) as its ``str``. Used to compare and save settings.

    >>> json_plain({"out": Path("a/b"), 1: (2, 3)})
    {'out': 'a/b', '1': [2, 3]}
    """
    return json.loads(json.dumps(data, default=str))


def write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
