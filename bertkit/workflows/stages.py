"""Resumable workflow stages (``bertkit adapt``): each stage runs into its own folder and records
its settings and results in ``stage.json``, so a rerun skips a finished stage, continues a stopped
one from its last checkpoint, and runs again a stage whose settings, input model or text changed
(and every later stage, through :func:`input_fingerprint`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from bertkit.settings.layers import replace
from bertkit.io import json_plain


def input_fingerprint(model: str | Path) -> str | None:
    """A short hash of the ``stage.json`` of the stage that produced ``model`` (``.../model``),
    or None for a model from elsewhere: a stage's settings include it, so a stage whose input
    was produced again runs again too."""
    import hashlib

    marker = Path(model).parent / "stage.json"
    return hashlib.sha1(marker.read_bytes()).hexdigest()[:16] if marker.is_file() else None


def text_fingerprint(paths: list[str] | str) -> str:
    """A short hash of the text a stage reads (files, or directories of them; comma-separated
    paths): the bytes of a file up to 64 MiB, its size and modification time above that. A stage's
    settings include it, so a stage whose text changed in place (e.g. TAPT text written for another
    ``--max-train-samples``) runs again."""
    import hashlib

    digest = hashlib.sha1()
    from bertkit.data.sets import split_paths

    names = [p for p in (split_paths(paths) if isinstance(paths, str) else paths) if p]
    for name in names:
        path = Path(name).expanduser()
        files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
        for f in files:
            digest.update(str(f).encode())
            if not f.is_file():
                continue
            stat = f.stat()
            digest.update(f.read_bytes() if stat.st_size <= 64 << 20
                          else f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _interrupted(folder: Path) -> bool:
    """Whether ``folder`` holds a stopped training run that ``--resume`` can continue (a step
    checkpoint, or its ``results.json`` when only ``stage.json`` is missing its results); a run
    stopped before its first checkpoint starts again."""
    from bertkit.training.rundir import resumable

    return resumable(folder)


def _last_step(folder: Path) -> int | None:
    from bertkit.training.checkpoint import list_checkpoints

    found = list_checkpoints(folder / "checkpoints")
    return int(found[-1].name[5:]) if found else None


def run_stage(name: str, folder: Path, settings: dict, run: Callable[[], dict],
              overwrite: bool, console=None, resume: Callable[[], dict] | None = None) -> dict:
    """Run one stage into ``folder`` unless its ``stage.json`` records it finished with the same
    settings (those of its settings that both runs have: an option added to bertkit since does
    not count).

    ``stage.json`` is written when the stage starts (``results`` null) and again when it ends.
    When the settings are the same apart from those a ``--resume`` may change
    (:data:`~bertkit.training.rundir.RESUME_MAY_CHANGE`: device, logging, evaluation batch), a
    finished stage is kept and a stopped one (SIGINT/SIGTERM, a crash) continues from its last
    checkpoint through ``resume`` (a training stage's ``--resume``); so does a stopped stage
    without ``stage.json`` (written by an older bertkit), whose run checks its own saved settings.
    Nothing the stage wrote is removed then.

    A stage recorded with other settings runs again (its outputs replaced, a note names the
    setting), and so does every later stage, whose settings hold its input's
    :func:`input_fingerprint`. ``overwrite`` runs it again in any case.

    Returns:
        the stage's results (as recorded in ``stage.json``).

    Raises:
        BertkitError: the stage's own errors (a stopped training stage raises
            :class:`~bertkit.training.rundir.RunStopped`).
    """
    from bertkit.io import write_json
    from bertkit.training.rundir import RESUME_MAY_CHANGE

    settings = json_plain(settings)
    marker = folder / "stage.json"
    note, go_on = "", False
    done = json.loads(marker.read_text(encoding="utf-8")) if marker.is_file() else None
    if done is not None and not overwrite:
        old = done.get("settings") or {}
        finished = done.get("results") is not None
        # where and how often a run writes or shows things never changes what it made
        changed = [k for k in sorted(set(old) & set(settings)) if old[k] != settings[k]
                   and k not in RESUME_MAY_CHANGE]
        if not changed and finished:
            if console:
                console.print(f"stage {name}: finished earlier, skipped ({folder})", highlight=False)
            return done["results"]
        if not changed:
            go_on = resume is not None and _interrupted(folder)
        else:
            key = changed[0]
            what = {"input": "its input was produced again",
                    "text": "its text changed"}.get(key, f"{key}: {old[key]!r}, now {settings[key]!r}")
            note = f" (settings changed since the last run, {what}: running it again"
            step = _last_step(folder) if not finished else None
            note += f"; the stopped run's checkpoint at step {step} is replaced)" if step else ")"
    elif done is None and not overwrite:
        go_on = resume is not None and _interrupted(folder)
    if console:
        console.rule(f"adapt: {name}")
        if note:
            console.print(f"[yellow]note:[/] stage {name}{note}", highlight=False)
        if go_on:
            step = _last_step(folder)
            console.print(f"stage {name}: stopped earlier, continuing"
                          f"{f' from step {step}' if step else ''} ({folder})", highlight=False)
    write_json(marker, {"stage": name, "settings": settings, "results": None})
    results = json_plain(resume() if go_on else run())
    write_json(marker, {"stage": name, "settings": settings, "results": results})
    return results


def continue_run(train: Callable, cfg, console,
                 keys: tuple[str, ...] | None) -> tuple[Callable[[], dict], Callable[[], dict]]:
    """``run`` and ``resume`` for :func:`run_stage`: ``train(cfg)`` from scratch (replacing the
    folder's run files), or with ``--resume`` from its last checkpoint (a run that had finished,
    :class:`~bertkit.training.rundir.RunComplete`, gives its ``results.json``); the results'
    ``keys`` (None: all)."""
    from bertkit.training.rundir import RunComplete

    def go(resume: bool) -> dict:
        stage_cfg = replace(cfg, resume=resume, overwrite=not resume)
        try:
            res = train(stage_cfg, console)
        except RunComplete as complete:
            res = json.loads((complete.path / "results.json").read_text(encoding="utf-8"))
        return res if keys is None else {k: res.get(k) for k in keys}

    return lambda: go(False), lambda: go(True)
