"""Rerunning ``bertkit run RECIPE -o DIR``: each stage continues where the last run left it.

:func:`bertkit.workflows.recipes.run_stage` asks here how to run a stage whose output may already hold
work, so that the same command, run again after a stop (SIGINT/SIGTERM, a crash), loses nothing:

* every stage records its settings in ``stage.json`` (a training stage's in its output folder);
  one that finished with the same settings is kept, one recorded with other settings is refused
  by the one rule of :mod:`bertkit.workflows.stages` (naming each setting), never replaced;
* a training stage (``pretrain``, ``finetune TASK``) not recorded finished whose folder holds a
  run is run with ``resume``: a stopped run continues from its last checkpoint, a finished one
  (written by an older bertkit) is kept (:class:`~bertkit.training.rundir.RunComplete`), and one
  saved with other settings is refused by the run's own check; a folder without a run starts.

A kept stage whose product a later stage reads (``"@stage"``: its ``model/``, or a vocabulary
folder) is checked before it is used (:func:`product_problem`): one that is missing or damaged
stops the run naming it and ``--set STAGE.overwrite=true``, which runs that stage again.

``--set overwrite=true`` starts every stage again, replacing its outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable


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
record: a moved run still matches), ``overwrite`` and progress display; they are not recorded
(the one rule leaves them out of the comparison too:
:func:`~bertkit.workflows.stages.not_settings`)."""


def _where_free(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings that make the vocabulary (all but :data:`NOT_VOCABULARY`)."""
    return {k: v for k, v in settings.items() if k not in NOT_VOCABULARY}


def vocab_defaults() -> dict[str, Any]:
    """:func:`bertkit.vocab.build.build_vocab`'s keyword defaults (a setting a recipe leaves out
    is compared at its default)."""
    import inspect

    from bertkit.vocab.build import build_vocab

    return {n: p.default for n, p in inspect.signature(build_vocab).parameters.items()
            if p.default is not inspect.Parameter.empty}


def way_forward(stage: str, single: bool, what: str = "run it") -> str:
    """How to go on from a ``bertkit run`` stage refused by the one rule: the recipe's earlier
    settings, another ``--output-dir``, or ``--set [STAGE.]overwrite=true``."""
    flag = "--set overwrite=true" if single else f"--set {stage}.overwrite=true"
    return (f"the recipe's earlier settings to continue the run, another --output-dir, or {flag} "
            f"to {what} again (the stages after it run again too)")


def finished_vocab(name: str, settings: dict[str, Any], single: bool = False) -> dict | None:
    """The results of a ``vocab build`` stage that finished with the same ``settings`` (its
    ``out`` folder's ``stage.json``, the one rule of
    :func:`~bertkit.workflows.stages.recorded_stage`), or None when it must run (no record, or
    ``overwrite``).

    Raises:
        SettingsChanged: the folder records a build with other settings (each one named).
    """
    from bertkit.workflows.stages import RECORD, recorded_stage

    if settings.get("overwrite"):
        return None
    done = recorded_stage(name, Path(settings["out"]).expanduser() / RECORD,
                          _where_free(settings), defaults=vocab_defaults(),
                          way_forward=way_forward(name, single, "build it"))
    return None if done is None else done.get("results")


def record_vocab(name: str, settings: dict[str, Any], results: dict) -> None:
    """Write the ``stage.json`` that :func:`finished_vocab` reads (after the build)."""
    from bertkit.workflows.stages import RECORD, record_stage

    record_stage(Path(settings["out"]).expanduser() / RECORD, name, _where_free(settings),
                 results)


def kept_note(name: str, where: Any, console, single: bool, verb: str = "trains") -> None:
    """Say that stage ``name`` finished earlier and is kept, and the ``--set`` that runs it
    again."""
    if console:
        flag = "--set overwrite=true" if single else f"--set {name}.overwrite=true"
        console.print(f"stage {name}: finished earlier, kept ({where}); {flag} {verb} it again",
                      highlight=False)


def run_vocab_stage(name: str, settings: dict[str, Any], console, restart: bool,
                    single: bool) -> tuple[dict, bool]:
    """A ``vocab build`` stage of ``bertkit run``: kept when its ``out`` folder records it
    finished with the same settings (:func:`finished_vocab`), else built and recorded.

    Returns:
        (its results, whether it was kept).

    Raises:
        SettingsChanged: it was built with other settings.
        BertkitError: no ``corpus`` setting, an unknown setting, or the build's own errors.
    """
    from bertkit.errors import BertkitError
    from bertkit.vocab.build import build_vocab

    settings = {**settings, **({"overwrite": True} if restart else {})}
    corpus = settings.pop("corpus", None)
    if not corpus:
        raise BertkitError(f"stage {name}: vocab build needs a 'corpus' setting")
    results = finished_vocab(name, {**settings, "corpus": corpus}, single)
    if results is not None:
        kept_note(name, settings["out"], console, single, "builds")
        return results, True
    try:
        results = build_vocab([corpus] if isinstance(corpus, str) else list(corpus), **settings)
    except TypeError as exc:
        raise BertkitError(f"stage {name}: {exc}") from None
    record_vocab(name, {**settings, "corpus": corpus}, results)
    if console:
        from bertkit.vocab.coverage import report_build
        report_build(results, settings["out"], console)
    return results, False


def run_training_stage(name: str, cfg: Any, run: Callable, console, again: bool,
                       single: bool) -> tuple[dict, bool]:
    """A training (or ``adapt``) stage of ``bertkit run``, ``run(cfg, console)`` into
    ``cfg.output_dir``: kept when its ``stage.json`` there records it finished with the same
    settings (the one rule, :func:`~bertkit.workflows.stages.recorded_stage`; ``again``: the
    stage runs again in any case), else run (a stopped run continues; one that finished before
    it was recorded is kept, :class:`~bertkit.training.rundir.RunComplete`) and recorded.

    Returns:
        (its results, whether it was kept).

    Raises:
        SettingsChanged: it was recorded with other settings (nothing is replaced).
        BertkitError: the command's own errors.
    """
    import dataclasses

    from bertkit.settings.layers import field_defaults
    from bertkit.training.rundir import RunComplete
    from bertkit.workflows.stages import RECORD, record_stage, recorded_stage

    record, now = Path(cfg.output_dir).expanduser() / RECORD, dataclasses.asdict(cfg)
    done = None if again else recorded_stage(name, record, now, defaults=field_defaults(cfg),
                                             way_forward=way_forward(name, single))
    if done is not None and done.get("results") is not None:
        kept_note(name, record.parent, console, single)
        return done["results"], True
    if record.is_file():  # the record of an earlier run: this one has not finished yet
        record_stage(record, name, now, None)
    kept = False
    try:
        results = run(cfg, console)
    except RunComplete as complete:
        kept_note(name, complete.path, console, single)
        results = json.loads((complete.path / "results.json").read_text(encoding="utf-8"))
        kept = True
    record_stage(record, name, now, results)
    return results, kept


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
