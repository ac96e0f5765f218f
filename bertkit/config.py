"""Dataclass configs: defaults < ``--recipe FILE`` (YAML) < explicit command-line flags.

A recipe key is the flag's name in snake case (``--batch-size`` <-> ``batch_size``); an unknown
key is an error naming the valid ones. Every run writes the resolved config as ``config.yaml``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from bertkit.errors import BertkitError

C = TypeVar("C")


def load_recipe(path: str | Path, command: str | None = None) -> dict[str, Any]:
    """Read a recipe YAML file into a flat ``{key: value}`` dict.

    Accepts a flat mapping of option values, or the ``bertkit run`` form (``command`` +
    ``settings``, see :mod:`bertkit.recipes`) whose command must be ``command`` when given.

    Raises:
        BertkitError: the file is missing, is not valid YAML, is not a mapping, is for another
            command or has several stages.
    """
    path = Path(path)
    if not path.is_file():
        from bertkit.recipes import find  # a named recipe (bertkit recipes lists them)

        path = find(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise BertkitError(f"not valid YAML: {problem}", file=path,
                           line=None if line is None else line + 1) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BertkitError("a recipe must be a mapping of option names to values", file=path)
    if "stages" in data:
        raise BertkitError("this recipe has several stages", file=path,
                           expected=f"bertkit run {path}")
    if "command" in data:  # the `bertkit run` form: command + settings
        if command is not None and " ".join(str(data["command"]).split()) != command:
            raise BertkitError(f"this recipe is for '{data['command']}', not '{command}'",
                               file=path, expected=f"bertkit run {path}")
        data = data.get("settings") or {}
        if not isinstance(data, dict):
            raise BertkitError("'settings' must be a mapping of option names to values", file=path)
    return {str(k).replace("-", "_"): expand_vars(str(k), v, path) for k, v in data.items()}


def expand_vars(key: str, value: Any, file: str | Path | None = None) -> Any:
    """A recipe value with ``$VARIABLES`` expanded from the environment
    (``$BERTKIT_DATA/corpus/train.txt``); other values unchanged.

    Raises:
        BertkitError: a variable used in ``value`` is not set (naming it and ``key``).
    """
    if not isinstance(value, str) or "$" not in value:
        return value
    expanded = os.path.expandvars(value)
    unset = re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", expanded)
    if unset:
        raise BertkitError(f"setting {key} ({value!r}) uses ${unset[0]}, which is not set",
                           file=file, expected=f"export {unset[0]}=... (for BERTKIT_DATA: the "
                                                f"folder holding ner/, re/, dep/, corpus/)")
    return expanded


def field_names(cls: type) -> list[str]:
    """The field names of dataclass ``cls``."""
    return [f.name for f in dataclasses.fields(cls)]


def build_config(cls: type[C], *layers: dict[str, Any] | None, source: str = "options") -> C:
    """Build dataclass ``cls`` from its defaults overlaid with each layer in turn.

    ``None`` values in a layer mean "not given" and leave the lower layer's value.

    Raises:
        BertkitError: a key that ``cls`` does not have (the message lists the valid keys).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            if key not in fields:
                raise BertkitError(
                    f"unknown option '{key}' in {source}",
                    expected="one of " + ", ".join(sorted(fields)),
                )
            if value is not None:
                values[key] = _coerce(key, value, hints[key], source)
    return cls(**values)


def _coerce(key: str, value: Any, hint: Any, source: str) -> Any:
    """Check ``value`` against the field's type (int, float, bool, str, optionally None).

    Raises:
        BertkitError: a value of the wrong type, naming the option and the source.
    """
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    kind = args[0]
    ok = ((kind is bool and isinstance(value, bool))
          or (kind is int and isinstance(value, int) and not isinstance(value, bool))
          or (kind is float and isinstance(value, (int, float)) and not isinstance(value, bool))
          or (kind is str and isinstance(value, (str, Path))))
    if kind is float and isinstance(value, str):  # YAML reads 1e-4 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            pass
    if not ok:
        name = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
        raise BertkitError(f"option '{key}' has the value {value!r}", file=None if source == "options"
                           else source, expected=name.get(kind, str(kind)))
    return float(value) if kind is float else str(value) if kind is str else value


def to_dict(cfg: Any) -> dict[str, Any]:
    """A dataclass config as plain YAML-safe data (paths become strings)."""
    out = {}
    for key, value in dataclasses.asdict(cfg).items():
        out[key] = str(value) if isinstance(value, Path) else value
    return out


def dump_yaml(data: dict[str, Any]) -> str:
    """Serialise a config dict as YAML, keys in definition order."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
