"""Reading recipe files: the YAML behind ``--recipe`` and ``bertkit run``, found by path or name.

Below both :mod:`bertkit.workflows.recipes` (which runs recipes) and :mod:`bertkit.workflows` (``adapt``
reads ``--finetune-recipe``/``--pretrain-recipe`` here), so neither imports upward.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bertkit.errors import BertkitError
from bertkit.settings.options import option


def recipe_dirs() -> list[Path]:
    """Folders searched for named recipes: the source checkout's, then the installed copy."""
    here = Path(__file__).resolve().parents[2] / "recipes"
    return [here, Path(sys.prefix) / "share" / "bertkit" / "recipes"]


def recipe_names() -> list[str]:
    """The names of the named recipes (``*.yaml`` under :func:`recipe_dirs`), sorted."""
    return sorted({p.stem for folder in recipe_dirs() if folder.is_dir()
                   for p in folder.rglob("*.yaml")})


def find(spec: str | Path) -> Path:
    """A recipe file from a path or a name (``bc5cdr-ner``).

    Raises:
        BertkitError: neither a file nor a known name (the message lists the names).
    """
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    for folder in recipe_dirs():
        hits = sorted(folder.rglob(f"{spec}.yaml")) if folder.is_dir() else []
        if hits:
            return hits[0]
    names = ", ".join(recipe_names()) or "none found"
    raise BertkitError(f"no recipe file or named recipe {str(spec)!r}",
                       expected=f"a YAML file or one of: {names}")


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise BertkitError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", file=path,
                           line=None if mark is None else mark.line + 1) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BertkitError(f"cannot read the recipe: {exc}", file=path) from None


def expand_vars(key: str, value: Any, file: str | Path | None = None) -> Any:
    """A recipe value with ``$VARIABLES`` expanded from the environment
    (``$BERTKIT_DATA/corpus/train.txt``); other values unchanged.

    >>> os.environ["BERTKIT_EXAMPLE"] = "/data"; expand_vars("corpus", "$BERTKIT_EXAMPLE/c.txt")
    '/data/c.txt'

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


def load_recipe(path: str | Path, command: str | None = None) -> dict[str, Any]:
    """Read a recipe (a YAML file or a name from ``bertkit recipes``) into a flat
    ``{key: value}`` layer for ``--recipe``, with ``$VARIABLES`` expanded.

    Accepts a flat mapping of option values, or the ``bertkit run`` form (``command`` +
    ``settings``) whose command must be ``command`` when given.

    Raises:
        BertkitError: the file is missing, is not valid YAML, is not a mapping, is for another
            command, has several stages, or uses an unset ``$VARIABLE``.
    """
    path = find(path)
    data = _read_yaml(path)
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


@dataclass(kw_only=True)
class RunSettings:
    """``bertkit run``: the recipe, its ``--set`` overrides and the run directory (declared once,
    :mod:`bertkit.settings.options`; the command is generated from them)."""

    recipe: str = option(help="Recipe file or name (see `bertkit recipes`).", positional=True)
    set_: list[str] | None = option(
        None, help="Override a setting: key=value (every stage that has it) or stage.key=value. "
                   "The value is read as the setting's type; quote it to pass text (key='1'). "
                   "Repeatable.", flags=("--set",), repeat=True, type=str)
    output_dir: Path | None = option(
        None, help="Run directory (one sub-folder per stage for multi-stage recipes). Rerunning "
                   "the same command there continues: finished stages are kept, a stopped one "
                   "resumes from its last checkpoint.", flags=("--output-dir", "-o"),
        shown="runs/<recipe>-<time>")
