"""The package's shape (issue 65): ``bertkit/`` holds folders that say what they hold (wings) and a
short, listed set of loose modules; every folder is a package with a docstring that names its
modules' ideas."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bertkit"

# The loose modules allowed at the top level, each with why it is not in a wing.
LOOSE = {
    "__init__.py": "the package",
    "__main__.py": "python -m bertkit",
    "_entry.py": "the console script (imports the CLI lazily)",
    "errors.py": "BertkitError, below every wing",
    "io.py": "atomic writes, below every wing",
    "encoders.py": "loading an encoder and its tokenizer, used by every wing that runs a model",
}


def _top_level() -> tuple[set[str], set[str]]:
    files = {p.name for p in PACKAGE.iterdir() if p.is_file() and p.suffix == ".py"}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    return files, folders


def test_only_the_listed_modules_stand_loose():
    files, _ = _top_level()
    assert files == set(LOOSE), f"new loose modules: {sorted(files - set(LOOSE))}; put them in a wing"
    assert len(LOOSE) - 1 <= 8  # the bound: at most 8 loose modules (the package aside)


def test_every_wing_is_a_package_with_a_docstring():
    _, folders = _top_level()
    assert {"settings", "inputs", "predict", "outputs", "jobs", "tasks", "training"} <= folders
    for folder in sorted(folders):
        init = PACKAGE / folder / "__init__.py"
        assert init.is_file(), f"bertkit/{folder}/ has no __init__.py"
        if folder in {"settings", "inputs", "predict", "outputs", "jobs"}:
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
            assert doc, f"bertkit/{folder}/__init__.py has no docstring"
            for module in sorted((PACKAGE / folder).glob("*.py")):
                if module.name != "__init__.py":
                    assert module.stem in doc, f"bertkit/{folder}/__init__.py does not name {module.stem}"
