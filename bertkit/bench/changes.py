"""What a rerun into a results folder compares besides settings and encoder: the data each
finished stage was scored on, and the suite's task as the stage was run (its kind and metric).

A data set re-issued between two runs (a test file corrected upstream, mteb#1782) or a suite
edited between them (a task's metric changed, lm-evaluation-harness PR #4123) would otherwise
leave old stages beside new seeds, averaged into one mean, or a report that stops on the old
stage's metric after the new seeds trained. Each stage records a fingerprint of the split files
it read (:func:`split_fingerprints`: size and SHA-256, as Hugging Face ``datasets`` records a
data file's checksum); :func:`refuse_changed` compares a finished stage with the rerun's before
anything trains.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from bertkit.errors import BertkitError

SPLITS = ("train", "dev", "test")


def _digest(files: list[Path], root: Path) -> tuple[int, str]:
    """(bytes, SHA-256) over ``files``; where ``root`` is a folder (a split held as one document
    a file) each file's path relative to it is hashed before its bytes."""
    h, size = hashlib.sha256(), 0
    for f in files:
        if root.is_dir():
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
                size += len(block)
    return size, h.hexdigest()


def split_source(kind: str, data: str, split: str) -> Path | None:
    """The file (or the folder of documents, coreference) holding ``split`` of ``data``; None
    where the set is not on disk (the hub) or has no such split (GENIA's train)."""
    from bertkit.data.sets import data_root, resolve_local
    from bertkit.tasks.registry import get_task

    try:
        task = get_task(kind)
        files = resolve_local(data, task.data_kind, tuple(task.extensions), (split,))
    except (BertkitError, AttributeError):
        files = None
    if files:
        return files[split]
    base = Path(data).expanduser() if Path(data).expanduser().is_dir() else \
        (data_root() / kind / data if data_root() else None)
    folder = base / split if base is not None else None
    return folder if folder is not None and folder.is_dir() else None


def split_fingerprints(kind: str, data: str) -> dict[str, dict]:
    """``{split: {"path", "bytes", "sha256"}}`` for each split of the data set a ``kind`` stage
    reads (``path`` as found, bytes and SHA-256 of the file's contents, or of a folder's files
    in name order); {} for a set read from the hub."""
    out = {}
    for split in SPLITS:
        source = split_source(kind, data, split)
        if source is None:
            continue
        files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() \
            else [source]
        size, digest = _digest(files, source)
        out[split] = {"path": str(source), "bytes": size, "sha256": digest}
    return out


def _data_changes(old: dict, new: dict) -> list[tuple[str, str]]:
    """``(path now, what changed)`` for each split whose size or hash differs."""
    out = []
    for split, was in old.items():
        now = new.get(split)
        if not isinstance(was, dict) or now is None:
            continue
        if (was.get("bytes"), was.get("sha256")) != (now["bytes"], now["sha256"]):
            out.append((now["path"], f"{split} {Path(now['path']).name}: "
                                     f"{was.get('bytes'):,} bytes, sha256 "
                                     f"{str(was.get('sha256'))[:12]} then; {now['bytes']:,} "
                                     f"bytes, sha256 {now['sha256'][:12]} now"))
    return out


def refuse_changed(label: str, done: dict, task, data_files: dict, suite_path: Path,
                   result: Path) -> None:
    """Refuse a finished stage whose suite task or data has changed since it was scored.

    Args:
        label: the stage (``ENC/TASK/seed-N``).
        done: its stage record (``metric``, ``task_kind``; ``data_files`` where written by this
            version: records without one are not compared).
        task: the suite's task now (a :class:`bertkit.bench.suite.SuiteTask`).
        data_files: :func:`split_fingerprints` of the task's data now.
        suite_path: the suite file, named with the task's line.
        result: the stage record's path (its stages folder is named in the way forward).

    Raises:
        BertkitError: the task's kind or metric differs from the stage's, or a split file it
            read has another size or hash (the file named, both fingerprints given).
    """
    folders = f"{result.parent} (and its runs/ folder)"
    for key, now in (("task_kind", task.task), ("metric", task.metric)):
        if done.get(key) != now:
            what = "metric" if key == "metric" else "task kind"
            raise BertkitError(
                f"task {task.name}: the suite now gives {what} {now!r}, but stage {label} was "
                f"scored with {done.get(key)!r}: the suite was edited since this folder's run",
                file=suite_path, line=task.line,
                expected=f"another -o folder for the edited suite, the suite's {what} as it was, "
                         f"or {folders} removed to rerun that task's stages")
    changed = _data_changes(done.get("data_files") or {}, data_files)
    if changed:
        raise BertkitError(
            f"the data of task {task.name} changed since stage {label} was scored on it (" +
            "; ".join(c for _, c in changed) + "): its stages would be averaged with seeds "
            "scored on the new data", file=changed[0][0],
            expected=f"the data the stage was scored on, another -o folder for the new data, or "
                     f"{folders} removed to rerun that task's stages")


def refuse_other_tasks_changed(suite, tasks: list, out: Path) -> None:
    """The finished stages in ``out`` of the suite's tasks outside ``tasks`` (``--tasks``)
    checked against the suite as it is now (kind and metric, :func:`refuse_changed`; their data
    is not hashed): ``bench.json`` takes the whole edited suite, and its report would stop on
    such a stage.

    Raises:
        BertkitError: as :func:`refuse_changed`.
    """
    from bertkit.bench.manifest import load_stage

    chosen = {t.name for t in tasks}
    for task in suite.tasks:
        if task.name in chosen:
            continue
        for path in sorted((Path(out) / "stages").glob(f"*/{task.name}/*.json")):
            refuse_changed(f"{path.parent.parent.name}/{task.name}/{path.stem}",
                           load_stage(path), task, {}, suite.path, path)
