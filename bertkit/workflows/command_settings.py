"""One settings builder for every command that trains: ``finetune``, ``pretrain``, ``adapt``'s
fine-tuning and pretraining stages, ``bertkit run`` and ``bertkit bench``.

The layers, weakest first (nanoGPT's defaults < config file < ``--key=value``, with the data
set's own layer that a newcomer expects from ``finetune --data scicite``):

1. the settings dataclass's defaults (``built-in default``);
2. the registered data set's dev-chosen recipe for that encoder (``data-set default``;
   :func:`dataset_defaults`): only for ``finetune <task>`` on the packaged encoder;
3. the saved run's ``config.yaml`` with ``--resume`` (``saved run``);
4. a recipe file or name, or a ``bertkit run`` stage's settings (``recipe``);
5. the command's flags (``flag``), then ``--set key=value`` (``--set``).

:func:`build_settings` returns a :class:`Settings`: the config and, per setting, the layer it
came from; :meth:`Settings.line` is the one ``settings: ...`` line every command prints, and the
config carries it into ``config.yaml`` (:func:`bertkit.settings.layers.config_yaml`).
:func:`finetune_settings` is the short form for a task, data set, encoder and overrides.

Below :mod:`bertkit.workflows.recipes` and :mod:`bertkit.workflows` (both use it): imports neither.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertkit.settings.layers import attach_sources, build_config, field_names
from bertkit.settings.recipe_files import load_recipe

SOURCE_ORDER = ("flag", "--set", "recipe", "saved run", "data-set default")
"""Where a setting can come from, in the order the settings line names them (a ``--set`` wins
over a flag, a flag over a recipe, ...); anything else is a built-in default."""

HIDDEN = ("output_dir",)
"""Settings the line never names (a run directory is in the next line anyway)."""


@dataclass
class Settings:
    """A command's resolved settings and where each came from.

    Attributes:
        config: the settings dataclass instance (``NERConfig``, ``PretrainConfig``, ...), checked
            for types (not ranges: ``config.validate()`` does that).
        sources: ``{setting: layer}`` for every setting that is not a built-in default, the
            layer one of :data:`SOURCE_ORDER`.
        dataset_recipe: the recipe the data-set defaults came from (``bc5cdr-ner-minilm``), or
            None when that layer is empty.
    """

    config: Any
    sources: dict[str, str] = field(default_factory=dict)
    dataset_recipe: str | None = None

    def line(self) -> str:
        """The one line saying where the settings came from (:func:`describe_sources`)."""
        extra = {"_dataset_recipe": self.dataset_recipe} if self.dataset_recipe else {}
        return describe_sources(self.config, {**self.sources, **extra})


def dataset_defaults(config_cls: type, command: str, layers: list[dict[str, Any] | None],
                     encoder: Any = ...) -> tuple[dict[str, Any], str | None]:
    """The dev-chosen settings of the registered data set a ``finetune`` run trains on, when it
    trains the packaged encoder: the settings of the set's recipe
    (:attr:`bertkit.data.sets.DatasetEntry.recipe`, e.g. ``bc5cdr-ner-minilm``) less ``data``.

    Args:
        config_cls: the command's config dataclass.
        command: ``"finetune ner"`` etc.; other commands have no data-set defaults.
        layers: the run's other layers (saved run, recipe, flags; None where absent), weakest
            first: they decide the data set and (unless ``encoder`` is given) the model.
        encoder: the encoder the settings are chosen for (None: the packaged one); ``...``: the
            model the layers name. ``adapt`` passes its base encoder, so the adapted model and
            the ``--compare`` baseline fine-tune with the same settings.

    Returns:
        ``(settings, recipe name)``, or ``({}, None)`` when the set is not registered, has no
        recipe, or another encoder is trained (the settings were chosen for the packaged one).
    """
    from bertkit.data.sets import entry

    words = command.split()
    if len(words) != 2 or words[0] != "finetune":
        return {}, None
    chosen: dict[str, Any] = {}
    for layer in layers:
        chosen.update({k: v for k, v in (layer or {}).items() if v is not None})
    defaults = {f.name: f.default for f in dataclasses.fields(config_cls)}
    data = chosen.get("data", defaults.get("data"))
    model = chosen.get("model") if encoder is ... else encoder
    found = entry(words[1], str(data)) if isinstance(data, str) else None
    if found is None or not found.recipe or not is_default_model(model):
        return {}, None
    settings = load_recipe(found.recipe, command)
    settings.pop("data", None)
    return {k: v for k, v in settings.items() if k in defaults}, found.recipe


def is_default_model(model: Any) -> bool:
    """Whether ``model`` (None: not given) is the packaged encoder."""
    if model in (None, ""):
        return True
    from bertkit.encoders import default_model

    try:
        return Path(str(model)).expanduser().resolve() == Path(default_model()).resolve()
    except (OSError, ImportError):
        return False


def build_settings(config_cls: type, command: str, *, flags: dict[str, Any] | None = None,
                   recipe: str | Path | dict[str, Any] | None = None,
                   overrides: dict[str, Any] | None = None,
                   fixed: dict[str, Any] | None = None, encoder: Any = ...,
                   source: str | None = None) -> Settings:
    """A command's settings from the layers of the module docstring, and their sources.

    Args:
        config_cls: the command's settings dataclass (``NERConfig``, ``PretrainConfig``).
        command: ``"finetune ner"``, ``"pretrain"``, ``"adapt"``: what a recipe must be for,
            and whether the data-set layer applies (``finetune <task>`` only).
        flags: the command's options; None values mean "not given" (the layer below shows).
            With ``resume`` true and an ``output_dir``, that run's ``config.yaml`` is a layer.
        recipe: a recipe file or name (``--recipe``), or its settings as a dict (a ``bertkit
            run`` stage).
        overrides: ``--set`` values (strongest of the user's layers).
        fixed: values the caller decides and no user layer may change (``adapt``'s run folders,
            ``overwrite``); not reported as sources.
        encoder: see :func:`dataset_defaults` (``...``: the model the layers name).
        source: how an error names where a bad value came from (default: the recipe, else
            ``options``).

    Returns:
        a :class:`Settings`; its config carries :meth:`Settings.line` for ``config.yaml``.

    Raises:
        BertkitError: an unknown key or a value of the wrong type (naming where it came from),
            an unreadable recipe or saved ``config.yaml``, a recipe for another command; with
            ``resume``, a run folder another command wrote (named before its settings are read).
    """
    from bertkit.training.run_origin import refuse_other_command
    from bertkit.training.rundir import saved_settings

    flags = dict(flags or {})
    if flags.get("resume") and flags.get("output_dir"):  # the folder's task before its settings
        refuse_other_command(Path(str(flags["output_dir"])).expanduser(), command)
    saved = saved_settings(flags.get("output_dir"), field_names(config_cls)) \
        if flags.get("resume") else None
    rec = recipe if isinstance(recipe, dict) or recipe is None else load_recipe(recipe, command)
    data_set, data_recipe = dataset_defaults(config_cls, command,
                                             [saved, rec, flags, overrides, fixed], encoder)
    where = source or (str(recipe) if recipe is not None and not isinstance(recipe, dict)
                       else "options")
    cfg = build_config(config_cls, data_set, saved, rec, flags, overrides, fixed, source=where)
    sources: dict[str, str] = {}
    for name, layer in (("data-set default", data_set), ("saved run", saved), ("recipe", rec),
                        ("flag", flags), ("--set", overrides)):
        sources.update({k: name for k, v in (layer or {}).items() if v is not None})
    for key in fixed or {}:
        sources.pop(key, None)
    used = data_recipe if "data-set default" in sources.values() else None
    settings = Settings(cfg, sources, used)
    attach_sources(cfg, settings.line())
    return settings


def finetune_settings(task: str, data: str | None = None, model: str | None = None,
                      overrides: dict[str, Any] | None = None,
                      recipe: str | Path | None = None) -> Settings:
    """The fine-tuning settings of ``task`` on ``data`` with ``model``, as ``bertkit finetune
    <task> --data DATA --model MODEL`` builds them, ``overrides`` as ``--set`` values on top.

    The one entry point for code that runs fine-tuning (``bertkit bench``): the same layers as
    every command (module docstring), so a suite row trains with the settings ``finetune``,
    ``adapt`` and ``run`` would use.

    Args:
        task: a registered task (``ner``, ``cls``, ...).
        data: a registered data set or a folder (None: the task's default).
        model: an encoder directory or hub id (None: the packaged encoder, which brings the
            data set's dev-chosen recipe).
        overrides: ``{setting: value}`` (snake_case names of the task's settings).
        recipe: a ``finetune <task>`` recipe file or name under the overrides.

    Returns:
        a :class:`Settings` (``.config`` is the task's settings dataclass, not yet validated).

    Raises:
        BertkitError: an unknown task, setting or value type (naming the valid ones).
    """
    from bertkit.errors import BertkitError
    from bertkit.tasks.registry import TASKS, load_attr

    if task not in TASKS:
        raise BertkitError(f"unknown task {task!r}", expected="one of " + ", ".join(TASKS))
    cls = load_attr(TASKS[task].config)
    return build_settings(cls, f"finetune {task}", flags={"data": data, "model": model},
                          recipe=recipe, overrides=overrides)


def describe_sources(cfg: Any, sources: dict[str, str]) -> str:
    """One line saying which settings came from where, e.g. ``settings: epochs 2 (flag); lr 2e-4,
    crf true (data-set default: recipe bc5cdr-ner-minilm, chosen on dev for the packaged
    encoder); the rest built-in defaults``. Switches a run always passes (``resume``,
    ``overwrite`` when off) and ``output_dir`` are left out."""
    from bertkit.settings.layers import format_value

    parts = []
    for where in SOURCE_ORDER:
        keys = [k for k, s in sources.items() if s == where and not k.startswith("_")
                and k not in HIDDEN and not (k in ("resume", "overwrite")
                                             and not getattr(cfg, k, None))]
        if not keys:
            continue
        shown = ", ".join(f"{k} {format_value(getattr(cfg, k))}" for k in keys)
        label = where
        if where == "data-set default":
            label += (f": recipe {sources.get('_dataset_recipe')}, chosen on dev for the "
                      f"packaged encoder")
        parts.append(f"{shown} ({label})")
    parts.append("the rest built-in defaults" if parts else "all built-in defaults")
    return "settings: " + "; ".join(parts)
