"""Dataclass configs: built from layers of settings, checked, and written as ``config.yaml``.

:func:`build_config` overlays layers on a dataclass's defaults (an unknown key is an error naming
the valid ones, a value of the wrong type names the option and where it came from). Which layers
a run has (saved run < ``--recipe`` < explicit flags) and how a recipe file is read (with
``$VARIABLES`` expanded) is :mod:`bertkit.workflows.recipes`' business: this module imports no recipe code,
so recipes build on configs and never the other way round.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from bertkit.errors import BertkitError

C = TypeVar("C")

# text options holding a comma-separated list of integers (``--seeds 1,2,3``); a YAML file may
# give them as a list of integers (``seeds: [1, 2, 3]``) or as one integer (``seeds: 1``)
INTEGER_LISTS = frozenset({"seeds"})


def field_names(cls: type) -> list[str]:
    """The field names of dataclass ``cls``."""
    return [f.name for f in dataclasses.fields(cls)]


def field_defaults(cfg: Any) -> dict[str, Any]:
    """``{name: default}`` of a config dataclass's fields that have a plain default (as
    :func:`to_dict` would write it; fields with a default factory are left out)."""
    return {f.name: f.default for f in dataclasses.fields(cfg)
            if f.default is not dataclasses.MISSING}


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

    An option of :data:`INTEGER_LISTS` (a text field) also takes a list of integers or one
    integer, kept as comma-separated text (``[1, 2]`` -> ``"1,2"``).

    Raises:
        BertkitError: a value of the wrong type, naming the option and the source.
    """
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    kind = args[0]
    if key in INTEGER_LISTS and kind is str and not isinstance(value, str):
        items = value if isinstance(value, (list, tuple)) else [value]
        if not items or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
            raise BertkitError(f"option '{key}' has the value {value!r}",
                               file=None if source == "options" else source,
                               expected="integers separated by commas (1,2,3), a list of "
                                        "integers or one integer")
        return ",".join(str(v) for v in items)
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


def format_value(value: Any) -> str:
    """A setting as help texts and run summaries print it: numbers below 0.01 in short
    scientific form (``2e-4``, ``1e-3``, as recipes and papers write learning rates), other
    numbers as Python prints them (``0.1``, ``1.0``, ``32``), switches as ``true``/``false``.

    >>> format_value(2e-4), format_value(5e-05), format_value(0.001), format_value(0.1)
    ('2e-4', '5e-5', '1e-3', '0.1')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value != 0 and abs(value) < 0.01:
        mantissa, _, exponent = f"{value:.6e}".partition("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    return str(value)


def to_dict(cfg: Any) -> dict[str, Any]:
    """A dataclass config as plain YAML-safe data (paths become strings)."""
    out = {}
    for key, value in dataclasses.asdict(cfg).items():
        out[key] = str(value) if isinstance(value, Path) else value
    return out


def dump_yaml(data: dict[str, Any]) -> str:
    """Serialise a config dict as YAML, keys in definition order."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


_SOURCES_ATTR = "_bertkit_settings_line"


def attach_sources(cfg: Any, line: str | None) -> Any:
    """Let ``cfg`` carry its settings-source line (``settings: lr 2e-4 (flag); ...``, from
    :mod:`bertkit.workflows.command_settings`) to :func:`config_yaml`; returns ``cfg``. An attribute, not a field:
    it is no setting (no option, no recipe key, not compared on ``--resume``)."""
    if line:
        setattr(cfg, _SOURCES_ATTR, line)
    return cfg


def sources_line(cfg: Any) -> str | None:
    """The settings-source line ``cfg`` carries (:func:`attach_sources`), or None."""
    return getattr(cfg, _SOURCES_ATTR, None)


def replace(cfg: C, **changes: Any) -> C:
    """:func:`dataclasses.replace` that keeps the settings-source line (:func:`attach_sources`)."""
    return attach_sources(dataclasses.replace(cfg, **changes), sources_line(cfg))


def config_yaml(settings: dict[str, Any], cfg: Any = None) -> str:
    """A run's ``config.yaml``: ``settings`` as YAML (:func:`dump_yaml`) under a comment giving
    where they came from (``# settings: epochs 2 (flag); the rest built-in defaults``) when
    ``cfg`` carries that line. A comment, so reading the file back gives the settings alone."""
    line = sources_line(cfg) if cfg is not None else None
    head = "".join(f"# {part}\n" for part in line.splitlines()) if line else ""
    return head + dump_yaml(settings)
