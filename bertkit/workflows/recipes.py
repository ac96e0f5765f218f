"""Recipes: YAML descriptions of complete setups, run with ``bertkit run RECIPE``.

A recipe is a mapping with a ``description`` (one line, shown by ``bertkit recipes``) and either
one command::

    description: BC5CDR NER with SciBERT's fine-tuning hyper-parameters
    command: finetune ner
    settings: {data: bc5cdr, lr: 2.0e-5, epochs: 4, crf: true}

or several stages run in order, a later stage naming an earlier one's output as ``"@stage"``::

    stages:
      - {name: vocab,  command: vocab build, settings: {corpus: corpus.txt, size: 30000}}
      - {name: phase1, command: pretrain,    settings: {vocab: "@vocab", max_seq_length: 128}}
      - {name: phase2, command: pretrain,    settings: {model: "@phase1", max_seq_length: 512}}

Settings use the command's option names in snake_case; ``$VARIABLES`` in string values are
expanded from the environment (``$BERTKIT_DATA/corpus/train.txt``). ``--set key=value`` overrides a key in
every stage whose command has that setting, ``--set stage.key=value`` in one stage; a value is
read for the setting's declared type (``--set lr=3e-5``, ``--set crf=false``; a text setting keeps
``1`` as text, and quotes, ``--set key='1'``, always give text). Named recipes live in the top-level ``recipes/`` folder
(installed under ``<prefix>/share/bertkit/recipes``).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bertkit.settings.layers import field_names
from bertkit.errors import BertkitError
from bertkit.settings.recipe_files import (_read_yaml, expand_vars, find, load_recipe,  # noqa: F401
                                  recipe_dirs)
from bertkit.workflows.command_settings import (SOURCE_ORDER, build_settings, dataset_defaults,  # noqa: F401
                              describe_sources)
from bertkit.tasks.registry import finetune_commands

# command -> (config dataclass, function taking (cfg, console) and returning the results dict).
COMMANDS: dict[str, tuple[str, str]] = {
    **finetune_commands(),  # every registered task (bertkit.tasks.registry)
    "pretrain": ("bertkit.tasks.pretrain:PretrainConfig", "bertkit.tasks.pretrain:pretrain"),
    "adapt": ("bertkit.workflows.adapt:AdaptConfig", "bertkit.workflows.adapt:adapt"),
}
# What "@stage" resolves to, per command: a key of the settings plus a sub-path.
_PRODUCT = {"vocab build": ("out", "")}  # the rest: output_dir/model


@dataclass
class Stage:
    """One command of a recipe with its settings (option names in snake_case); ``overrides``
    names the settings that ``--set`` changed (:func:`apply_overrides`)."""

    name: str
    command: str
    settings: dict[str, Any] = field(default_factory=dict)
    overrides: set[str] = field(default_factory=set)


@dataclass
class Recipe:
    """A parsed recipe: its name, file, one-line description and stages (at least one)."""

    name: str
    path: Path
    description: str
    stages: list[Stage]


def list_recipes() -> list[Recipe]:
    """Every named recipe (``*.yaml`` under :func:`recipe_dirs`), sorted by name; the first
    folder wins on a name clash."""
    found: dict[str, Recipe] = {}
    for folder in recipe_dirs():
        if folder.is_dir():
            for path in sorted(folder.rglob("*.yaml")):
                if path.stem not in found:
                    found[path.stem] = load(path)
    return [found[k] for k in sorted(found)]


def run_settings(config_cls: type, command: str, flags: dict[str, Any],
                 recipe: str | Path | None = None):
    """A run's settings (:func:`bertkit.workflows.command_settings.build_settings`'s config): the dataclass
    defaults < the data set's dev-chosen settings < the saved run's ``config.yaml`` (with
    ``--resume``) < ``--recipe`` < explicit flags.

    Raises:
        BertkitError: as :func:`bertkit.workflows.command_settings.build_settings`.
    """
    return build_settings(config_cls, command, flags=flags, recipe=recipe).config


def settings_with_sources(config_cls: type, command: str, flags: dict[str, Any],
                          recipe: str | Path | None = None):
    """``(config, sources)`` of :func:`bertkit.workflows.command_settings.build_settings`; ``sources`` also maps
    ``"_dataset_recipe"`` to the recipe the data-set defaults came from (when any did).

    Raises:
        BertkitError: as :func:`bertkit.workflows.command_settings.build_settings`.
    """
    built = build_settings(config_cls, command, flags=flags, recipe=recipe)
    extra = {"_dataset_recipe": built.dataset_recipe} if built.dataset_recipe else {}
    return built.config, {**built.sources, **extra}


def _settings(raw: Any, path: Path, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise BertkitError(f"{where}: 'settings' must be a mapping of option names to values",
                           file=path)
    return {str(k).replace("-", "_"): v for k, v in raw.items()}


def _check_command(command: Any, path: Path, where: str) -> str:
    known = sorted(set(COMMANDS) | {"vocab build"})
    if not isinstance(command, str) or " ".join(command.split()) not in known:
        raise BertkitError(f"{where}: unknown command {command!r}", file=path,
                           expected="one of: " + ", ".join(known))
    return " ".join(command.split())


def load(spec: str | Path) -> Recipe:
    """Parse a recipe (file or name) into a :class:`Recipe`.

    Raises:
        BertkitError: unreadable YAML, a missing ``command``/``stages``, an unknown command, a
            duplicated stage name or settings that are not a mapping (file and line named).
    """
    path = find(spec)
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise BertkitError("a recipe must be a mapping", file=path,
                           expected="keys description and command + settings, or stages")
    description = str(data.get("description", "")).strip()
    if "stages" in data:
        raw = data["stages"]
        if not isinstance(raw, list) or not raw:
            raise BertkitError("'stages' must be a non-empty list", file=path)
        stages = []
        for i, item in enumerate(raw, 1):
            if not isinstance(item, dict):
                raise BertkitError(f"stage {i} must be a mapping", file=path)
            name = str(item.get("name", f"stage{i}"))
            stages.append(Stage(name, _check_command(item.get("command"), path, f"stage {name}"),
                                _settings(item.get("settings"), path, f"stage {name}")))
        names = [s.name for s in stages]
        if len(set(names)) != len(names):
            raise BertkitError(f"stage names repeat: {names}", file=path)
    elif "command" in data:
        stages = [Stage("main", _check_command(data["command"], path, "recipe"),
                        _settings(data.get("settings"), path, "recipe"))]
    else:
        raise BertkitError("a recipe needs 'command' (with 'settings') or 'stages'", file=path)
    return Recipe(path.stem, path, description, stages)


def stage_fields(command: str) -> dict[str, Any]:
    """``{setting: declared type}`` of a stage's command: its config dataclass's fields, or
    :func:`bertkit.vocab.build.build_vocab`'s keyword arguments (and ``corpus``) for ``vocab
    build``."""
    import inspect
    import typing

    if command == "vocab build":
        from bertkit.vocab.build import build_vocab

        hints = typing.get_type_hints(build_vocab)
        return {"corpus": str, **{n: hints.get(n, Any) for n in
                                  inspect.signature(build_vocab).parameters if n != "corpus"}}
    cls = _load_attr(COMMANDS[command][0])
    hints = typing.get_type_hints(cls)
    return {name: hints[name] for name in field_names(cls)}


_QUOTED = re.compile(r"""^\s*(?:'(.*)'|"(.*)")\s*$""", re.DOTALL)


def override_value(text: str, hint: Any = Any) -> Any:
    """A ``--set`` value read for a setting declared as ``hint``: quoted (``'1'``, ``"1"``) it is
    that text; for a text setting (``str``) it is the text as given (``1`` stays ``'1'``;
    ``null`` or ``~`` is None where the setting may be None); for a number the number; otherwise
    YAML (``true``, ``[1, 2]``; ``3e-5``, which YAML 1.1 reads as text, as a number).

    >>> override_value("1", str), override_value("'1'", float), override_value("3e-5", float)
    ('1', '1', 3e-05)
    """
    import typing

    quoted = _QUOTED.match(text)
    if quoted:
        return quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
    args = [a for a in typing.get_args(hint) if a is not type(None)] \
        if typing.get_origin(hint) is not None else [hint]
    optional = type(None) in typing.get_args(hint)
    if str in args and not {int, float, bool} & set(args):  # str, str | None, str | Path
        return None if optional and text.strip() in ("null", "~") else text
    kind = args[0] if len(args) == 1 else None
    if kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            pass
    try:
        value = yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError:
        return text
    if isinstance(value, str):  # YAML 1.1 reads 3e-5 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            pass
    return value


def apply_overrides(recipe: Recipe, overrides: list[str]) -> Recipe:
    """Apply ``--set key=value`` / ``--set stage.key=value`` overrides.

    ``key=value`` goes to every stage whose command has the setting ``key`` (a recipe that
    pretrains and then fine-tunes gets ``--set max_steps=100`` in its pretraining stage only);
    ``stage.key=value`` to that stage. Each value is read for the setting's declared type
    (:func:`override_value`): a text setting keeps ``1`` as the text ``'1'``, and quotes
    (``key='1'``) always give text.

    Raises:
        BertkitError: an override without ``=``, naming an unknown stage, or a setting that no
            stage (or not the named stage) has: the message lists the settings there are.
    """
    stages = {s.name: s for s in recipe.stages}
    fields = {s.name: stage_fields(s.command) for s in recipe.stages}

    def valid(names: list[str]) -> str:
        return "; ".join(f"stage {n} ({stages[n].command}): " + ", ".join(sorted(fields[n]))
                         for n in names)

    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise BertkitError(f"--set {item!r}: expected key=value or stage.key=value")
        stage_name, dot, name = key.strip().rpartition(".")
        name = name.replace("-", "_")
        if dot:
            if stage_name not in stages:
                raise BertkitError(f"--set {item!r}: no stage {stage_name!r}",
                                   expected="one of " + ", ".join(stages))
            targets = [stage_name]
            if name not in fields[stage_name]:
                raise BertkitError(f"--set {item!r}: stage {stage_name} has no setting {name!r}",
                                   expected="a setting of " + valid(targets))
        else:
            targets = [n for n in stages if name in fields[n]]
            if not targets:
                raise BertkitError(
                    f"--set {item!r}: no stage of recipe {recipe.name} has a setting {name!r}",
                    expected="a setting of " + valid(list(stages)))
        for target in targets:
            stages[target].settings[name] = override_value(text, fields[target][name])
            stages[target].overrides.add(name)
    return recipe


def _resolve_refs(settings: dict[str, Any], products: dict[str, str]) -> dict[str, Any]:
    out = {}
    for key, value in settings.items():
        if isinstance(value, str) and value.startswith("@"):
            if value[1:] not in products:
                raise BertkitError(f"setting {key}: {value!r} names no earlier stage",
                                   expected="@" + " or @".join(products) if products else
                                   "a stage defined above this one")
            value = products[value[1:]]
        else:  # $BERTKIT_DATA/corpus/train.txt
            value = expand_vars(key, value)
        out[key] = value
    return out


def _load_attr(spec: str) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def run_stage(stage: Stage, output_dir: Path, console=None, restart: bool = False,
              single: bool = False) -> tuple[dict, str, bool]:
    """Run one stage, writing to ``output_dir`` unless its settings name an output; returns
    (its results, the path that ``@stage`` resolves to, whether it was kept). A stage recorded
    finished with the same settings is kept as it is (its ``stage.json`` results, or a finished
    run's ``results.json``); one recorded with other settings is refused by the one rule
    (:mod:`bertkit.workflows.stages`); ``restart`` starts it again instead, replacing its outputs
    (``overwrite``). ``single``: the recipe has one stage (the refusal's ``--set`` names none).

    Raises:
        SettingsChanged: the stage was run with other settings.
        BertkitError: from the stage's command.
    """
    settings = dict(stage.settings)
    key, sub = _PRODUCT.get(stage.command, ("output_dir", "model"))
    settings.setdefault(key, str(output_dir))
    if stage.command == "vocab build":
        from bertkit.workflows.recipe_stages import run_vocab_stage

        settings.pop("resume", None)  # a rerun keeps a finished build (finished_vocab)
        results, kept = run_vocab_stage(stage.name, settings, console, restart, single)
    else:
        results, kept = _run_command(stage, settings, console, restart, single)
    product = Path(settings[key]) / sub if sub else Path(settings[key])
    return results, str(product), kept


def _command_config(stage: Stage, settings: dict, console, restart: bool):
    """The stage command's config, by the one settings path (:mod:`bertkit.workflows.command_settings`): the data
    set's dev-chosen settings for the packaged encoder < the recipe's < ``--set``; a rerun
    continues (``resume``/``overwrite``: :func:`bertkit.workflows.recipe_stages.continue_settings`).
    """
    from bertkit.workflows.recipe_stages import continue_settings

    cls_spec = COMMANDS.get(stage.command, (None, None))[0]
    if cls_spec is None:
        raise BertkitError(f"stage {stage.name}: command {stage.command!r} is not available")
    cls: type = _load_attr(cls_spec)
    if restart and "overwrite" in field_names(cls):
        settings["overwrite"] = True
    own = continue_settings(field_names(cls), settings, settings["output_dir"])
    given = {k: v for k, v in own.items() if k in stage.settings}
    built = build_settings(
        cls, stage.command, recipe={k: v for k, v in given.items() if k not in stage.overrides},
        overrides={k: v for k, v in given.items() if k in stage.overrides},
        fixed={k: v for k, v in own.items() if k not in given},
        source=f"recipe stage {stage.name}")
    if console:  # where the settings came from, as every command prints it
        console.print(built.line(), highlight=False, markup=False)
    return built.config


def _run_command(stage: Stage, settings: dict, console, restart: bool,
                 single: bool) -> tuple[dict, bool]:
    """A training (or ``adapt``) stage, run by
    :func:`bertkit.workflows.recipe_stages.run_training_stage` (kept, refused by the one rule,
    continued or started)."""
    from bertkit.workflows.recipe_stages import run_training_stage

    cfg = _command_config(stage, settings, console, restart)
    return run_training_stage(stage.name, cfg, _load_attr(COMMANDS[stage.command][1]), console,
                              again=restart or bool(stage.settings.get("overwrite")),
                              single=single)


def _read_later(recipe: Recipe, name: str) -> bool:
    """Whether a stage after ``name`` reads its product (a setting ``"@name"``)."""
    later = [s for s in recipe.stages[[x.name for x in recipe.stages].index(name) + 1:]]
    return any(v == f"@{name}" for s in later for v in s.settings.values())


def _check_product(stage: Stage, product: str, single: bool) -> None:
    """Refuse to go on from a kept stage whose product is missing or damaged.

    Raises:
        BertkitError: naming what is wrong and the ``--set`` that runs the stage again.
    """
    from bertkit.workflows.recipe_stages import product_problem

    problem = product_problem(product, stage.command)
    if problem:
        what = "vocabulary" if stage.command == "vocab build" else "model"
        flag = "--set overwrite=true" if single else f"--set {stage.name}.overwrite=true"
        raise BertkitError(
            f"stage {stage.name} finished earlier, but its {what} is missing or damaged: "
            f"{problem}", file=product,
            expected=f"{flag} to run stage {stage.name} again (the stages after it run again "
                     f"too), or another --output-dir")


def run_recipe(recipe: Recipe, output_root: Path, console=None) -> dict[str, dict]:
    """Run every stage of ``recipe`` in order, writing to ``output_root/<stage>`` (``output_root``
    itself for a one-stage recipe) unless a stage sets its own output; ``"@stage"`` values become
    that stage's product (a vocabulary directory or a saved model). Rerun over the same
    ``output_root``, a finished stage is kept (its product checked when a later stage reads
    it: :func:`bertkit.workflows.recipe_stages.product_problem`), a stopped one resumes; once a
    stage has run
    rather than being kept (resumed, or started again with ``overwrite``), every later stage
    starts again, as what it reads may have changed. Returns ``{stage name: results}``.

    Raises:
        BertkitError: from any stage; earlier stages' outputs stay in place.
    """
    products: dict[str, str] = {}
    results: dict[str, dict] = {}
    ran: str | None = None  # the first stage that ran rather than being kept
    for stage in recipe.stages:
        stage = Stage(stage.name, stage.command, _resolve_refs(stage.settings, products),
                      stage.overrides)
        out = output_root if len(recipe.stages) == 1 else output_root / stage.name
        if console:
            console.rule(f"{recipe.name}: stage {stage.name} ({stage.command})")
            if ran is not None and out.is_dir() and any(out.iterdir()):
                console.print(f"stage {stage.name}: starts again, since stage {ran} ran again "
                              "(what it reads may have changed)", highlight=False)
        results[stage.name], products[stage.name], kept = run_stage(
            stage, out, console, restart=ran is not None, single=len(recipe.stages) == 1)
        if kept and _read_later(recipe, stage.name):
            _check_product(stage, products[stage.name], len(recipe.stages) == 1)
        if not kept and ran is None:
            ran = stage.name
    return results
