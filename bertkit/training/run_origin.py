"""Where a run folder came from, read from its ``environment.json`` (:mod:`bertkit.outputs.provenance`):
the command that wrote it and the bertkit version, so that ``--resume`` on a folder of another
task or another version says so first (issue 45, kinds 10-11; transformers#24626,
marian-dev#402)."""

from __future__ import annotations

from pathlib import Path

from bertkit.errors import BertkitError


def _environment(path: Path) -> dict:
    """The run's ``environment.json`` (:mod:`bertkit.outputs.provenance`) as a dict; {} when missing or
    unreadable (it is a record, not an input)."""
    import json

    try:
        env = json.loads((Path(path).expanduser() / "environment.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return env if isinstance(env, dict) else {}


def saved_command(path: Path) -> str | None:
    """The command that wrote the run in ``path`` (``"finetune ner"``, ``"pretrain"``), read from
    the command line ``environment.json`` records; None when it names none (``bertkit run``,
    ``adapt``) or there is no record.

    >>> import tempfile, json; d = Path(tempfile.mkdtemp())
    >>> _ = (d / "environment.json").write_text(json.dumps({"command": "bertkit finetune ner -d x"}))
    >>> saved_command(d)
    'finetune ner'
    """
    words = str(_environment(path).get("command") or "").split()
    for i, word in enumerate(words):
        if word == "pretrain":
            return "pretrain"
        if word == "finetune" and i + 1 < len(words) and not words[i + 1].startswith("-"):
            return f"finetune {words[i + 1]}"
    return None


def refuse_other_command(path: Path, command: str | None) -> None:
    """Refuse ``--resume`` of the run in ``path`` as ``command`` (``"finetune qa"``) when another
    command wrote it (:func:`saved_command`): said before any of its saved settings is read, so
    that a `finetune ner` folder resumed as `finetune qa` is named as such, not by a setting qa
    cannot take (issue 66, kind 14). Nothing is checked without a ``command`` or a record.

    Raises:
        BertkitError: the folder holds a run of another command.
    """
    was = saved_command(path) if command else None
    if was and was != command:
        raise BertkitError(
            f"--resume: this folder holds a `{was}` run, not a `{command}` run", file=path,
            expected=f"`bertkit {was} --resume --output-dir {path}` to continue it, or "
                     f"another --output-dir for a new `{command}` run")


def refuse_other_version(path: Path, saved: dict, now: dict, defaults: dict | None) -> None:
    """For :func:`bertkit.training.rundir.check_resume_settings`, whose ``saved`` and ``now``
    settings differ: when another bertkit version wrote the run (its ``environment.json``),
    refuse naming both versions and the settings only one of them has (no flag of this version
    can give a setting it lacks).

    Raises:
        BertkitError: the versions differ.
    """
    from bertkit import __version__

    then = (_environment(path).get("packages") or {}).get("bertkit")
    if not then or then == __version__:
        return
    defaults = defaults or {}
    only_saved = [k for k in saved if k not in now]
    only_now = [k for k in now if k not in saved
                and not (k in defaults and now[k] == defaults[k])]
    parts = [f"settings only bertkit {then} has: {', '.join(only_saved)}" if only_saved else "",
             f"settings only bertkit {__version__} has: {', '.join(only_now)}" if only_now else ""]
    lacks = "; ".join(p for p in parts if p) or "the same settings, with other meanings or values"
    raise BertkitError(
        f"--resume of a run written by bertkit {then} with bertkit {__version__} ({lacks})",
        file=Path(path).expanduser() / "environment.json",
        expected=f"bertkit {then} to finish this run (pip install bertkit=={then}), or a new "
                 f"--output-dir (or --overwrite) to train again with bertkit {__version__}")
