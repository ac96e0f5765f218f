"""The one stage runner of bertkit's resumable workflows (``bertkit adapt``, ``bertkit run
RECIPE``, ``bertkit bench run``): stages run in order, each into its own folder with a record of
the settings it ran with (``stage.json``: ``stage``, ``settings``, ``results``, null until it
finished); a rerun keeps a finished stage, continues a stopped one from its last checkpoint, and
applies one rule when a stage's recorded settings differ from the requested ones:

**the stage is refused** (:class:`SettingsChanged`), naming the stage, each setting that changed
with its recorded and its requested value, and the way forward (another output folder, or the
command's own flag that runs stages again: ``bertkit adapt --overwrite``, ``bertkit run --set
STAGE.overwrite=true``); nothing the stage wrote is replaced. The settings compared
(:func:`settings_changes`) are all the recorded and requested ones but :func:`not_settings`
(where and how often a stage writes or shows things); a setting one side lacks (an option that
bertkit gained since) is read at its default. A stage's settings hold the fingerprints of what it
reads (:func:`input_fingerprint`, :func:`text_fingerprint`), so a stage whose input model or text
changed is refused too.

This is the rule that ``--resume`` applies to one training run
(:func:`bertkit.training.rundir.check_resume_settings`) carried over to stages. A workflow engine
decides in the same way, from a job's recorded parameters and input fingerprints, whether its
output is current (Snakemake's rerun triggers: Köster and Rahmann 2012, Bioinformatics 28(19));
unlike Snakemake, a stage out of date is refused, never replaced on its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from bertkit.errors import BertkitError
from bertkit.settings.layers import replace
from bertkit.io import json_plain

RECORD = "stage.json"
"""The file in a stage's folder that records its settings and results."""

NOT_MADE = frozenset({"out", "show_progress"})
"""``vocab build``'s settings of where it writes and what it shows (:func:`not_settings`)."""


def not_settings() -> frozenset[str]:
    """Settings that say where and how often a stage writes or shows things, never what it
    makes (:data:`~bertkit.training.rundir.RESUME_MAY_CHANGE` and :data:`NOT_MADE`): a stage
    recorded with other values of these is the same stage. (A function: the training package
    is imported only when a record is compared.)"""
    from bertkit.training.rundir import RESUME_MAY_CHANGE

    return RESUME_MAY_CHANGE | NOT_MADE


NOTES = {"input": "its input model was produced again since",
         "text": "the text it reads changed since"}
"""How a change of a fingerprint setting is said (its hashes tell a reader nothing)."""

WAY_FORWARD = "the settings it ran with, another output folder, or the command's overwrite flag"
"""The way forward of a refusal when a command names none of its own."""


@dataclass(frozen=True)
class Change:
    """One setting in which a stage's requested settings differ from its recorded ones
    (``key`` dotted for a nested setting; ``note`` says it in words instead of the values)."""

    key: str
    recorded: Any
    requested: Any
    note: str | None = None

    def __str__(self) -> str:
        if self.note:
            return f"{self.key}: {self.note}"
        return f"{self.key}: {self.recorded!r} -> {self.requested!r}"


class SettingsChanged(BertkitError):
    """A stage recorded with settings other than the requested ones (:func:`check_settings`);
    ``changes`` lists them."""

    def __init__(self, message: str, changes: list[Change], **kwargs: Any):
        super().__init__(message, **kwargs)
        self.changes = changes


def settings_changes(recorded: Mapping[str, Any], requested: Mapping[str, Any],
                     defaults: Mapping[str, Any] | None = None,
                     notes: Mapping[str, str] | None = None) -> list[Change]:
    """Each setting in which ``requested`` differs from ``recorded``, in key order: every key
    of either side but :func:`not_settings`, nested mappings compared key by key (``a.b``),
    values as JSON holds them (a tuple is its list). A key one side lacks is read at its value
    in ``defaults`` (a config's field defaults: an option bertkit gained since, recorded
    before it existed, is the behaviour the stage had), else as None. ``notes``: words for a
    key's change instead of its values (adds to :data:`NOTES`).

    >>> [str(c) for c in settings_changes({"lr": 1e-4, "device": "cpu"},
    ...                                   {"lr": 3e-4, "device": "cuda", "warmup": 0.1},
    ...                                   defaults={"warmup": 0.1})]
    ['lr: 0.0001 -> 0.0003']
    """
    said = {**NOTES, **(notes or {})}
    return _changes(json_plain(dict(recorded)), json_plain(dict(requested)),
                    json_plain(dict(defaults or {})), said, "")


def _changes(old: dict, new: dict, defaults: dict, notes: Mapping[str, str],
             prefix: str) -> list[Change]:
    out, ignored = [], not_settings() if not prefix else frozenset()
    for key in sorted(set(old) | set(new)):
        if key in ignored:
            continue
        a, b = old.get(key, defaults.get(key)), new.get(key, defaults.get(key))
        if isinstance(a, dict) and isinstance(b, dict):
            out += _changes(a, b, {}, notes, f"{prefix}{key}.")
        elif a != b:
            out.append(Change(prefix + key, a, b, notes.get(prefix + key)))
    return out


def check_settings(stage: str, recorded: Mapping[str, Any], requested: Mapping[str, Any], *,
                   file: Path, way_forward: str = WAY_FORWARD, finished: bool = True,
                   defaults: Mapping[str, Any] | None = None,
                   notes: Mapping[str, str] | None = None) -> None:
    """The one rule: refuse stage ``stage`` when its ``requested`` settings differ from those
    ``recorded`` for it (:func:`settings_changes`).

    Args:
        file: the record, named in the message.
        way_forward: what the user may do instead (the message's "expected").
        finished: whether the recorded stage finished (else it was started and stopped).

    Raises:
        SettingsChanged: naming the stage, each changed setting with both values, and the way
            forward.
    """
    changes = settings_changes(recorded, requested, defaults, notes)
    if changes:
        state = "finished" if finished else "was started"
        raise SettingsChanged(f"stage {stage} {state} with other settings: "
                              + "; ".join(map(str, changes)), changes, file=file,
                              expected=way_forward)


def read_record(path: Path) -> dict | None:
    """A stage's ``stage.json`` (:data:`RECORD`), or None where there is none.

    Raises:
        BertkitError: it is not a JSON object with a ``settings`` object.
    """
    if not path.is_file():
        return None
    try:
        done = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BertkitError(f"unreadable stage record ({type(exc).__name__})", file=path,
                           expected="the stage.json bertkit wrote, or the stage's folder "
                                    "removed to run it again") from None
    if not isinstance(done, dict) or not isinstance(done.get("settings") or {}, dict):
        raise BertkitError("a stage record is a JSON object with a settings object", file=path,
                           expected="the stage.json bertkit wrote, or the stage's folder "
                                    "removed to run it again")
    return done


def recorded_stage(stage: str, path: Path, requested: Mapping[str, Any], *,
                   way_forward: str = WAY_FORWARD, defaults: Mapping[str, Any] | None = None,
                   read: Callable[[Path], dict | None] = read_record,
                   settings_of: Callable[[dict], Mapping[str, Any]] | None = None,
                   finished: Callable[[dict], bool] | None = None,
                   notes: Mapping[str, str] | None = None) -> dict | None:
    """The record of stage ``stage`` at ``path`` when it was run with the ``requested``
    settings (finished or not: ``finished`` tells), None where there is none.

    Args:
        read: reads a record (:func:`read_record`; a command with its own record format passes
            its reader).
        settings_of: the recorded settings in a record (default: its ``settings``).
        finished: whether a record is of a finished stage (default: its ``results`` are set).

    Raises:
        SettingsChanged: the stage was run with other settings (:func:`check_settings`).
        BertkitError: the record cannot be read.
    """
    done = read(path)
    if done is None:
        return None
    ended = finished(done) if finished else done.get("results") is not None
    recorded = settings_of(done) if settings_of else (done.get("settings") or {})
    check_settings(stage, recorded, requested, file=path, way_forward=way_forward,
                   finished=ended, defaults=defaults, notes=notes)
    return done


def record_stage(path: Path, stage: str, settings: Mapping[str, Any],
                 results: dict | None) -> None:
    """Write stage ``stage``'s record (``results`` None: started, not finished) atomically."""
    from bertkit.io import write_json

    write_json(path, {"stage": stage, "settings": json_plain(dict(settings)),
                      "results": json_plain(results)})


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
              overwrite: bool, console=None, resume: Callable[[], dict] | None = None, *,
              way_forward: str = WAY_FORWARD, defaults: dict | None = None,
              title: str = "adapt") -> dict:
    """Run one stage into ``folder`` unless its ``stage.json`` records it finished with the same
    settings (the one rule, :func:`recorded_stage`).

    ``stage.json`` is written when the stage starts (``results`` null) and again when it ends.
    A finished stage is kept; a stopped one (SIGINT/SIGTERM, a crash) continues from its last
    checkpoint through ``resume`` (a training stage's ``--resume``); so does a stopped stage
    without ``stage.json`` (written by an older bertkit), whose run checks its own saved
    settings. A stage recorded with other settings (its input produced again, its text changed)
    is refused; ``overwrite`` runs it again in any case, replacing its outputs.

    Args:
        way_forward: a refusal's way forward (the command's flags).
        defaults: the settings' defaults (a config's fields: :func:`settings_changes`).
        title: the console rule's prefix (the command).

    Returns:
        the stage's results (as recorded in ``stage.json``).

    Raises:
        SettingsChanged: the stage was run with other settings (nothing is replaced).
        BertkitError: an unreadable ``stage.json``; the stage's own errors (a stopped training
            stage raises :class:`~bertkit.training.rundir.RunStopped`).
    """
    settings = json_plain(settings)
    marker = folder / RECORD
    done = None if overwrite else recorded_stage(name, marker, settings, way_forward=way_forward,
                                                 defaults=defaults)
    if done is not None and done.get("results") is not None:
        if console:
            console.print(f"stage {name}: finished earlier, skipped ({folder})", highlight=False)
        return done["results"]
    go_on = not overwrite and resume is not None and _interrupted(folder)
    if console:
        console.rule(f"{title}: {name}")
        if go_on:
            step = _last_step(folder)
            console.print(f"stage {name}: stopped earlier, continuing"
                          f"{f' from step {step}' if step else ''} ({folder})", highlight=False)
    record_stage(marker, name, settings, None)
    results = json_plain(resume() if go_on else run())
    record_stage(marker, name, settings, results)
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
