"""Rerunning ``bertkit run RECIPE -o DIR``: each stage continues where the last run left it.

:func:`bertkit.workflows.recipes.run_stage` asks here how to run a stage whose output may already hold
work, so that the same command, run again after a stop (SIGINT/SIGTERM, a crash), loses nothing:

* a training stage (``pretrain``, ``finetune TASK``) whose folder holds a run is run with
  ``resume``: a stopped run continues from its last checkpoint, a finished one is kept
  (:class:`~bertkit.training.rundir.RunComplete`), and one saved with other settings is refused
  by the run's own check (naming each setting), never replaced; a folder without a run starts;
* a ``vocab build`` stage that finished (its ``stage.json`` records the same settings) is kept;
  one built with other settings is refused.

A kept stage whose product a later stage reads (``"@stage"``: its ``model/``, or a vocabulary
folder) is checked before it is used (:func:`product_problem`): one that is missing or damaged
stops the run naming it and ``--set STAGE.overwrite=true``, which runs that stage again.

``--set overwrite=true`` starts every stage again, replacing its outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bertkit.errors import BertkitError
from bertkit.io import json_plain


def continue_settings(fields: list[str], settings: dict[str, Any],
                      output: str | Path) -> dict[str, Any]:
    """``settings`` with ``resume`` set for a rerun: True when ``output`` holds a run that
    :func:`~bertkit.training.rundir.resumable` can continue (or one of its ``seed-N`` folders holds a run) and
    ``overwrite`` is not set, else False; a run there that stopped before its first checkpoint
    is started again (``overwrite``). Commands without a ``resume`` setting (``fields``: the
    config's field names) get ``settings`` unchanged.

    Returns:
        a new dict (``settings`` is not changed).
    """
    from bertkit.training.rundir import _holds_run, resumable

    out = dict(settings)
    if "resume" not in fields or out.get("overwrite"):
        return out
    folder = Path(output).expanduser()
    out["resume"] = resumable(folder) or any(_holds_run(p) for p in folder.glob("seed-*"))
    if not out["resume"] and _holds_run(folder) and "overwrite" in fields:
        out["overwrite"] = True  # it stopped before its first checkpoint: start it again
    return out


NOT_VOCABULARY = frozenset({"out", "overwrite", "show_progress", "resume"})
"""``vocab build`` settings that do not change the vocabulary: ``out`` (the folder that holds the
record: a moved run still matches), ``overwrite`` and progress display."""


def _where_free(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings that make the vocabulary (all but :data:`NOT_VOCABULARY`)."""
    return {k: v for k, v in settings.items() if k not in NOT_VOCABULARY}


def finished_vocab(name: str, settings: dict[str, Any]) -> dict | None:
    """The results of a ``vocab build`` stage that finished with the same ``settings`` (its
    ``out`` folder's ``stage.json``), or None when it must run (no record, or ``overwrite``).

    Raises:
        BertkitError: the folder records a build with other settings (the first one named).
    """
    if settings.get("overwrite"):
        return None
    marker = Path(settings["out"]).expanduser() / "stage.json"
    if not marker.is_file():
        return None
    done = json.loads(marker.read_text(encoding="utf-8"))
    old, now = _where_free(done.get("settings") or {}), json_plain(_where_free(settings))
    changed = [k for k in sorted(set(old) | set(now)) if old.get(k) != now.get(k)]
    if changed:
        key = changed[0]
        raise BertkitError(f"stage {name}: the vocabulary there was built with other settings "
                           f"({key}: {old.get(key)!r}, now {now.get(key)!r})", file=marker.parent,
                           expected="the recipe's earlier settings to continue the run, another "
                                    "--output-dir, or --set overwrite=true to build everything "
                                    "again")
    return done.get("results")


def record_vocab(name: str, settings: dict[str, Any], results: dict) -> None:
    """Write the ``stage.json`` that :func:`finished_vocab` reads (after the build)."""
    from bertkit.io import write_json

    write_json(Path(settings["out"]).expanduser() / "stage.json",
               {"stage": name, "settings": json_plain(_where_free(settings)), "results": json_plain(results)})


WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
"""The files one of which a saved model folder holds its weights in (transformers' names)."""


def product_problem(path: str | Path, command: str) -> str | None:
    """What makes the product of a finished stage unusable, or None when it looks whole.

    A ``vocab build`` folder needs ``vocab.txt`` or ``tokenizer.json``; a model folder (a training
    stage's ``model/``) needs a ``config.json`` that parses and a non-empty weights file
    (:data:`WEIGHT_FILES`) whose safetensors header reads. Only headers are read: the check is
    quick even for a large model.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        return f"{folder} does not exist"
    if command == "vocab build":
        if not any((folder / n).is_file() for n in ("vocab.txt", "tokenizer.json")):
            return f"{folder} has no vocab.txt or tokenizer.json"
        return None
    config = folder / "config.json"
    if not config.is_file():
        return f"{folder} has no config.json"
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"{config} is not readable JSON ({exc})"
    weights = [folder / n for n in WEIGHT_FILES if (folder / n).is_file()]
    if not weights:
        return f"{folder} has no weights file ({', '.join(WEIGHT_FILES[::2])})"
    if weights[0].stat().st_size == 0:
        return f"{weights[0]} is empty"
    if weights[0].suffix == ".safetensors":
        try:
            from safetensors import safe_open

            with safe_open(str(weights[0]), framework="pt") as handle:
                handle.keys()
        except Exception as exc:  # noqa: BLE001 - any failure to read the header is damage
            return f"{weights[0]} cannot be read ({str(exc).strip().splitlines()[0][:200]})"
    return None
