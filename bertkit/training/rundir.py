"""The run directory: refuse to mix two runs, check it is writable before training starts."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bertkit.errors import BertkitError
from bertkit.training.devices import is_main_process

RUN_MARKERS = ("config.yaml", "results.json", "metrics.jsonl", "checkpoints", "model")


def default_run_dir(task: str, data: str) -> Path:
    """``runs/<task>-<data name>-<YYYYmmdd-HHMMSS>`` under the current directory."""
    name = Path(data).name or "data"
    return Path("runs") / f"{task}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def check_run_dir(path: Path, resume: bool, overwrite: bool) -> None:
    """The checks of :func:`prepare_run_dir` that need no writing, to run before any loading.

    Raises:
        BertkitError: as :func:`prepare_run_dir`, except for write failures.
    """
    path = Path(path).expanduser()
    if not is_main_process():  # rank 0 checks and writes; the others must not race it
        return
    if path.exists() and not path.is_dir():
        raise BertkitError("output path exists and is not a directory", file=path)
    holds_run = path.is_dir() and any((path / m).exists() for m in RUN_MARKERS)
    if resume and not holds_run:
        raise BertkitError("--resume given but there is no run to resume", file=path,
                           expected="the --output-dir of an earlier run")
    if holds_run and not (resume or overwrite):
        raise BertkitError("output directory already holds a run", file=path,
                           expected="--resume to continue it, --overwrite to replace it, "
                                    "or another --output-dir")


def prepare_run_dir(path: Path, resume: bool, overwrite: bool) -> Path:
    """Create ``path`` (or check it for ``resume``) and make sure files can be written there.

    Raises:
        BertkitError: the directory holds another run (without ``resume``/``overwrite``),
            ``resume`` with no run there, or it cannot be written (read-only, full disk).
    """
    path = Path(path).expanduser()
    if not is_main_process():
        return path
    check_run_dir(path, resume, overwrite)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-") as handle:
            handle.write(b"\0" * 65536)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise BertkitError(f"cannot write to the output directory: {exc.strerror}", file=path) from None
    return path


def checkpoint_bytes(model) -> int:
    """Rough size of one training checkpoint of ``model``: fp32 weights plus AdamW's two moment
    tensors, plus the saved model (bytes)."""
    params = sum(p.numel() for p in model.parameters())
    return params * 4 * 4


def check_free_space(path: Path, need_bytes: int) -> None:
    """Refuse to start when the disk holding ``path`` has less than ``need_bytes`` free.

    Raises:
        BertkitError: not enough free space (both sizes given in MiB).
    """
    import shutil

    free = shutil.disk_usage(Path(path).expanduser()).free
    if free < need_bytes:
        raise BertkitError(f"only {free / 2**20:.0f} MiB free on the output disk; a checkpoint "
                           f"and the saved model need about {need_bytes / 2**20:.0f} MiB",
                           file=path, expected="free disk space or another --output-dir")
