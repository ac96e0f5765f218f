"""``bertkit/bench/`` names no task (issue 65): what a suite needs of a task (its metrics, their
per-item statistics and floors, its test text, its families, its own settings) is the task's
declaration (:class:`bertkit.tasks.base.SuiteSpec`), read through the registry. Read from the
source with ``ast`` (nothing of bench is imported): no string constant outside a docstring is a
registered task's name or one of the names its declaration holds, and no import reaches a task
package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bertkit.tasks.registry import get_task, task_names

BENCH = Path(__file__).resolve().parents[1] / "bertkit" / "bench"

RESULT_KEYS = {"majority_share", "baseline_macro_f1", "hoc_recall", "hoc_precision",
               "constant_gold", "zero_shot_pearson", "negative_label"}
"""Test figures of single tasks that bench's floors once read by name."""


def _declared_names() -> set[str]:
    """Every task name, and every metric name and key, family and own setting the tasks
    declare."""
    names = set(task_names()) | RESULT_KEYS
    for task in task_names():
        spec = get_task(task).suite
        names |= {m.name for m in spec.metrics} | {m.key for m in spec.metrics}
        names |= set(spec.families) | set(spec.settings)
    return names


def _docstrings(tree: ast.AST) -> set[int]:
    """``id`` of each docstring node (module, class, function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def task_mentions(source: str, forbidden: set[str], tasks: list[str]) -> list[str]:
    """``line: what`` for each string constant in ``source`` (docstrings aside) that is one of
    ``forbidden``, and each import of a task package ``bertkit.tasks.<task>``."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in skip and node.value in forbidden:
            found.append(f"{node.lineno}: {node.value!r}")
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) \
            and node.module else []
        for module in modules:
            parts = module.split(".")
            if parts[:2] == ["bertkit", "tasks"] and len(parts) > 2 and parts[2] in tasks:
                found.append(f"{node.lineno}: import {module}")
    return found


def test_the_check_finds_the_bench_files_and_the_declared_names():
    files = {p.name for p in BENCH.glob("*.py")}
    assert {"declarations.py", "contamination.py", "suite.py", "report.py", "runner.py",
            "floors.py", "stage_settings.py"} <= files and len(files) >= 15
    names = _declared_names()
    assert {"ner", "sim", "coref", "entity_f1", "hoc_f1", "f1", "pearson", "architecture",
            "pico", "doc-cls"} <= names


@pytest.mark.parametrize("source, hits", [
    ('x = "ner"\n', ["1: 'ner'"]),
    ('def f(t):\n    return t["hoc_f1"]\n', ["2: 'hoc_f1'"]),
    ('if task == "sim" and key == "architecture":\n    pass\n', ["1: 'sim'", "1: 'architecture'"]),
    ("from bertkit.tasks.ner.suite import SUITE\n", ["1: import bertkit.tasks.ner.suite.SUITE"]),
    ("import bertkit.tasks.coref.data\n", ["1: import bertkit.tasks.coref.data"]),
    ('"""A module about ner and sim."""\ndef f():\n    """entity_f1."""\n', []),
    ('x = "the ner task"\nfrom bertkit.tasks.registry import get_task\n', []),
])
def test_the_check_catches_a_task_name(source, hits):
    assert task_mentions(source, _declared_names(), task_names()) == hits


def test_bench_names_no_task():
    names, tasks = _declared_names(), task_names()
    found = {p.name: hits for p in sorted(BENCH.glob("*.py"))
             if (hits := task_mentions(p.read_text(encoding="utf-8"), names, tasks))}
    assert found == {}
