"""The state file of a streaming ``predict`` run: what it reads, with what, and how far it got.

``OUTPUT.state.json`` sits beside the unfinished output (``OUTPUT.part``) and is rewritten
(atomically, :func:`bertkit.io.write_json`) after every chunk, once the chunk's output is on disk.
Its size does not grow with the input (a chunk costs the same at the millionth as at the first):
what does grow, the chunks' byte ranges and the skipped lines, is appended to the log
``OUTPUT.state.log`` (JSON lines), and the state records how much of the log is valid. It holds:

* ``input``: the input's identity: absolute path, size, modification time and the SHA-256 of
  its first MiB; ``model``: the saved model's (path, the SHA-256 of its ``config.json`` and
  ``bertkit.json``, the size and head hash of each weights file); ``settings``: what shapes the
  output (task, formats, chunk size, shard). ``--resume`` refuses when any of them differs.
* ``next``: where reading continues (byte offset, line, record index) and ``output_offset``, the
  length of the output's whole records: a resume cuts the output there first, so a record half
  written when the run stopped is written again, whole.
* ``log_offset``: the bytes of ``OUTPUT.state.log`` written with the chunks done (a resume cuts
  the log there too). The log's lines are ``{"chunk": [chunk, start, end]}``, the byte range of a
  finished chunk in the output (a shard's run writes them; the merge of shards reads them), and
  ``{"skipped": [line, reason]}``, a line skipped. :func:`load_state` reads them back as the
  state's ``chunks`` and ``skipped`` lists.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

from bertkit.errors import BertkitError

VERSION = 2  # 2: chunks and skipped lines moved to the append-only log
HEAD_BYTES = 1 << 20  # the head hashed to tell two inputs (or weights files) apart


def _head_sha(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.sha256(handle.read(HEAD_BYTES)).hexdigest()


def input_identity(path: str | Path) -> dict[str, Any]:
    """``{path, size, mtime_ns, head_sha256}`` of an input file (its bytes as stored: a ``.gz``
    file's compressed bytes)."""
    p = Path(path).resolve()
    st = p.stat()
    return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "head_sha256": _head_sha(p)}


def model_identity(directory: str | Path) -> dict[str, Any]:
    """``{path, files}`` of a saved model folder: the SHA-256 of its small JSON files and the
    size and head SHA-256 of its weights (hashing whole weights files would cost seconds)."""
    d = Path(directory).resolve()
    files: dict[str, Any] = {}
    for f in sorted(d.iterdir()) if d.is_dir() else ():
        if f.name in ("config.json", "bertkit.json", "head.json"):
            files[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
        elif f.suffix in (".safetensors", ".bin", ".pt"):
            files[f.name] = [f.stat().st_size, _head_sha(f)]
    return {"path": str(d), "files": files}


def state_path(output: str | Path) -> Path:
    """The state file of ``output``: ``OUTPUT.state.json``."""
    return Path(str(output) + ".state.json")


def part_path(output: str | Path) -> Path:
    """Where an unfinished output is written: ``OUTPUT.part`` (renamed to ``OUTPUT`` at the end,
    so a file at ``OUTPUT`` is always a whole one)."""
    return Path(str(output) + ".part")


@contextlib.contextmanager
def output_lock(output: str | Path, create: bool = True) -> Iterator[Path]:
    """Hold ``OUTPUT.lock`` (an exclusive ``flock``, never waited for) while a run writes
    ``OUTPUT``: a second ``predict`` (or ``predict merge``) onto the same output would replace
    the first one's live ``OUTPUT.part`` and state. The lock file holds the owner's process id
    and is removed when the run ends; the kernel releases the lock of a killed run, so a stale
    file never blocks. A lock taken on a file another run has just removed is taken again on
    the new file (the inode is compared). Where ``fcntl`` is missing (Windows) or the file
    system does not support ``flock`` (some network mounts), nothing is locked.

    ``create=False`` (``predict merge``, which writes no new folder): where the output's folder
    does not exist nothing is locked (no run can be writing there) and nothing is created.

    Raises:
        BertkitError: another process holds the lock (its process id, and what to do).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield Path(str(output) + ".lock")
        return
    path = Path(str(output) + ".lock")
    if not create and not path.parent.is_dir():
        yield path
        return
    path.parent.mkdir(parents=True, exist_ok=True)  # as the output's own writer does
    while True:
        handle = open(path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                handle.close()  # no flock on this file system: run unlocked
                yield path
                return
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            raise BertkitError(f"another bertkit predict (process {owner}) is writing {output}",
                               file=path, expected="one run per output: wait for it to end, "
                               "stop it (Ctrl-C keeps its records; then --resume), or choose "
                               "another -o") from None
        try:
            same = os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        handle.close()  # locked a file its owner removed on finishing: take the new one
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)  # still held: no other run is inside
    finally:
        handle.close()


def log_path(state_file: str | Path) -> Path:
    """The append-only log beside a state file: ``OUTPUT.state.log``."""
    return Path(str(state_file)[:-len(".json")] + ".log") if str(state_file).endswith(".json") \
        else Path(str(state_file) + ".log")


def log_lines(chunk: list[int] | None, skipped: list[list]) -> bytes:
    """The log lines of one finished chunk: its skipped lines and its ``[chunk, start, end]``."""
    rows = [{"skipped": s} for s in skipped] + ([{"chunk": chunk}] if chunk else [])
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def read_log(path: str | Path, upto: int) -> tuple[list[list[int]], list[list]]:
    """``(chunks, skipped)`` from the first ``upto`` bytes of the log at ``path`` (none when it
    is missing); a chunk logged twice (a partial chunk, then its resumed rest) is one range."""
    chunks: list[list[int]] = []
    skipped: list[list] = []
    path = Path(path)
    if not path.exists() or upto <= 0:
        return chunks, skipped
    with path.open("rb") as handle:
        data = handle.read(upto)
    for raw in data.splitlines():
        row = json.loads(raw)
        if "skipped" in row:
            skipped.append(row["skipped"])
        elif chunks and chunks[-1][0] == row["chunk"][0]:
            chunks[-1][2] = row["chunk"][2]
        else:
            chunks.append(list(row["chunk"]))
    return chunks, skipped


def load_state(path: str | Path) -> dict[str, Any] | None:
    """The state in ``path``, or None when there is none, with ``chunks`` and ``skipped`` read
    from its log (:func:`read_log`).

    Raises:
        BertkitError: the file is not a state file of this version.
    """
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise BertkitError("not a predict state file (unreadable JSON)", file=path,
                           expected="the OUTPUT.state.json a streaming predict wrote") from None
    if not isinstance(state, dict) or state.get("version") != VERSION:
        raise BertkitError("not a predict state file of this bertkit", file=path,
                           expected=f"version {VERSION}")
    state["chunks"], state["skipped"] = read_log(log_path(path), state.get("log_offset", 0))
    return state


def save_state(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically, without its ``chunks`` and ``skipped`` (they are
    in the log): a few hundred bytes, whatever the input's size."""
    from bertkit.io import write_json

    write_json(path, {k: v for k, v in state.items() if k not in ("chunks", "skipped")})


def _differences(old: dict, new: dict) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [f"{k} {old.get(k)!r} then, {new.get(k)!r} now" for k in keys
            if old.get(k) != new.get(k)]


def continues(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether input ``new`` (:func:`input_identity`) is ``old`` made whole: the same path, more
    bytes, and the same first bytes (the SHA-256 of its first ``min(old size, HEAD_BYTES)``
    bytes is ``old``'s head hash), as a cut-off download is of the complete file."""
    if old.get("path") != new.get("path") or new.get("size", 0) <= old.get("size", 0):
        return False
    with open(new["path"], "rb") as handle:
        head = handle.read(min(old["size"], HEAD_BYTES))
    return hashlib.sha256(head).hexdigest() == old.get("head_sha256")


def check_resume(state: dict[str, Any], fresh: dict[str, Any], where: Path) -> None:
    """Refuse to continue the run of ``state`` with the ``fresh`` identities and settings; a run
    stopped by a cut-off input (``state["cut_off"]``) continues on that input made whole
    (:func:`continues`).

    Raises:
        BertkitError: another input (path, size, time or head), another model, or other
            settings (formats, chunk size, shard) than the run being resumed; the message says
            what differs and how to start again.
    """
    for part, what in (("input", "from another input"), ("model", "with another model"),
                       ("settings", "with other settings")):
        old, new = state.get(part) or {}, fresh.get(part) or {}
        if part == "input" and state.get("cut_off") and continues(old, new):
            continue
        if part == "model":
            old, new = {"path": old.get("path"), **old.get("files", {})}, \
                {"path": new.get("path"), **new.get("files", {})}
        diff = _differences(old, new)
        if diff:
            raise BertkitError(
                f"cannot resume: the unfinished output was made {what} "
                f"({'; '.join(diff[:3])})", file=where,
                expected=f"the same {part} as the interrupted run; or start again without "
                         "--resume (the unfinished output is then replaced)")
