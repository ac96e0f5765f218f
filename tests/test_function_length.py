"""No function of bertkit/ is over 80 lines (issue 65: a reader takes a function in at a glance;
a longer one is split into named steps, as ``training/loop.py`` ``train`` is)."""

import ast
from pathlib import Path

LIMIT = 80
ROOT = Path(__file__).resolve().parents[1] / "bertkit"

def function_lengths(root: Path = ROOT) -> dict[str, int]:
    """``path::Class.function`` -> lines (decorators left out, docstring included) of every
    function and method under ``root``, nested ones too."""
    lengths = {}

    def walk(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lengths[f"{path}::{name}"] = child.end_lineno - child.lineno + 1
                walk(child, path, name + ".")
            else:
                walk(child, path, prefix)

    for file in sorted(root.rglob("*.py")):
        walk(ast.parse(file.read_text(encoding="utf-8")), str(file.relative_to(root.parent)), "")
    return lengths


def test_no_function_over_the_limit():
    lengths = function_lengths()
    assert len(lengths) > 1000  # the walk found the package's functions
    over = {name: n for name, n in sorted(lengths.items()) if n > LIMIT}
    assert not over, (f"functions over {LIMIT} lines (split each into named steps): "
                      + ", ".join(f"{name} ({n})" for name, n in over.items()))


def test_the_walk_measures_methods_and_nested_functions(tmp_path):
    package = tmp_path / "bertkit"
    package.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    (package / "m.py").write_text(f"class A:\n    def f(self):\n{body.replace('    ', '        ')}"
                                  f"\n\ndef g():\n    def h():\n        pass\n    return h\n")
    lengths = function_lengths(package)
    assert lengths == {"bertkit/m.py::A.f": LIMIT + 1, "bertkit/m.py::g": 4, "bertkit/m.py::g.h": 2}
