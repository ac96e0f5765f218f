"""The import direction of the package, read from the source with ``ast`` (nothing is imported):
the training core imports no task, no task package imports another, no task imports the command
line or the workflows, only the command line imports ``bertkit.cli``, the settings wing imports no
workflow and ``adapt`` does not import ``bertkit.workflows.recipes``, no two modules import each other,
directly or round a circle, and the wings (the folders of ``bertkit/``) stand in layers: each
imports only wings below it (:data:`WING_LAYERS`).

Every ``import`` statement counts, also those inside functions (a lazy import is still a
dependency). ``from bertkit.a import b`` is an import of the module ``bertkit.a.b`` when that is a
module, else of ``bertkit.a``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "bertkit"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The bertkit module ``name`` denotes (its longest prefix that is a module), or None."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return None


def _imports(module: str) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x / from ..a import b
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            names = [f"{stem}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] == "bertkit" and (target := _resolve(name)) \
                    and target != module:
                found.add(target)
    return found


GRAPH = {module: _imports(module) for module in MODULES}


def _task_package(module: str) -> str | None:
    """``bertkit.tasks.<name>`` for a module inside a task package (a folder), else None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["bertkit", "tasks"] and \
            (PACKAGE / "tasks" / parts[2]).is_dir():
        return ".".join(parts[:3])
    return None


def _edges(source_prefix: str, target_prefix: str) -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                  if (m == source_prefix or m.startswith(source_prefix + "."))
                  and (t == target_prefix or t.startswith(target_prefix + ".")))


def test_the_graph_is_read():
    assert "bertkit.training.loop" in GRAPH["bertkit.training"]
    assert "bertkit.settings.layers" in GRAPH["bertkit.workflows.recipes"]
    assert len(MODULES) > 50


def test_training_core_imports_no_task():
    assert _edges("bertkit.training", "bertkit.tasks") == []


def test_settings_import_no_workflow():
    assert _edges("bertkit.workflows.command_settings", "bertkit.workflows") == []


def test_tasks_import_neither_the_command_line_nor_the_workflows():
    assert _edges("bertkit.tasks", "bertkit.cli") == []
    assert _edges("bertkit.tasks", "bertkit.workflows") == []


def test_workflows_do_not_import_recipes_or_the_command_line():
    assert _edges("bertkit.workflows.adapt", "bertkit.workflows.recipes") == []
    assert _edges("bertkit.workflows", "bertkit.cli") == []


def test_model_cards_know_no_task():
    """Each task hands its card spec to bertkit.outputs.modelcard; the module reads no task table."""
    assert _edges("bertkit.outputs.modelcard", "bertkit.tasks") == []


def test_only_the_command_line_imports_it():
    upward = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                    if t.startswith("bertkit.cli") and not m.startswith("bertkit.cli")
                    and m not in ("bertkit.__main__", "bertkit._entry"))  # the console entry
    assert upward == []


def test_the_layer_check_sees_an_upward_import(monkeypatch):
    monkeypatch.setitem(GRAPH, "bertkit.tasks.ner.task", {"bertkit.cli._app"})
    assert _edges("bertkit.tasks", "bertkit.cli") == ["bertkit.tasks.ner.task -> bertkit.cli._app"]


def test_no_task_package_imports_another():
    crossing = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                      if _task_package(m) and _task_package(t)
                      and _task_package(m) != _task_package(t))
    assert crossing == []


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert _cycles() == []


def test_the_cycle_finder_finds_a_circle(monkeypatch):
    monkeypatch.setitem(GRAPH, "bertkit.errors", {"bertkit.settings.layers"})  # layers imports errors
    assert ["bertkit.errors", "bertkit.settings.layers"] in _cycles()


@pytest.mark.parametrize("text, module, expected", [
    ("from . import viterbi\n", "bertkit.decoding", "bertkit.decoding.viterbi"),
    ("from ..errors import BertkitError\n", "bertkit.training.loop", "bertkit.errors"),
])
def test_relative_imports_resolve(tmp_path, monkeypatch, text, module, expected):
    path = tmp_path / ("__init__.py" if module == "bertkit.decoding" else "x.py")
    path.write_text(text)
    monkeypatch.setitem(MODULES, module, path)
    assert expected in _imports(module)


def test_bench_sits_on_top_and_reaches_tasks_through_the_registry_only():
    """Only the command line imports bertkit.bench; bench imports tasks only by the registry
    (it fine-tunes through ``python -m bertkit finetune``) and never the command line."""
    users = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                   if t.startswith("bertkit.bench") and not m.startswith(("bertkit.bench",
                                                                          "bertkit.cli")))
    assert users == []
    assert [e for e in _edges("bertkit.bench", "bertkit.tasks")
            if not e.endswith("-> bertkit.tasks.registry")] == []
    assert _edges("bertkit.bench", "bertkit.cli") == []


# The wings of bertkit/, lowest first: a wing imports only wings of a lower layer (rank). Modules
# at the top level (errors, io, encoders, the package itself) are wings of their own.
WING_LAYERS: list[tuple[str, ...]] = [
    ("bertkit", "errors"),
    ("io", "encoders"),
    ("settings", "data", "masking", "decoding", "inputs"),
    ("jobs", "metrics", "heads", "vocab"),
    ("outputs",),
    ("training",),
    ("predict",),
    ("tasks",),
    ("workflows",),
    ("bench",),
    ("cli",),
    ("_entry",),
    ("__main__",),
]
RANK = {wing: rank for rank, wings in enumerate(WING_LAYERS) for wing in wings}


def _wing(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "bertkit"


def _upward_wing_imports() -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                  if _wing(m) != _wing(t) and RANK[_wing(t)] >= RANK[_wing(m)])


def test_every_wing_has_a_layer():
    assert {_wing(m) for m in MODULES} == set(RANK)


def test_wings_import_only_lower_layers():
    assert _upward_wing_imports() == []


def test_the_wing_check_sees_an_import_upward_or_sideways(monkeypatch):
    monkeypatch.setitem(GRAPH, "bertkit.data.sets", {"bertkit.training.loop"})
    monkeypatch.setitem(GRAPH, "bertkit.masking.span", {"bertkit.data.sets"})
    assert _upward_wing_imports() == ["bertkit.data.sets -> bertkit.training.loop",
                                      "bertkit.masking.span -> bertkit.data.sets"]
