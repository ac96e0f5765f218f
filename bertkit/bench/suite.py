"""Suite files: the schema, the loader, the shipped suites.

A suite is a YAML file (lm-evaluation-harness keeps tasks the same way: a file a user reads,
diffs and shares)::

    name: mini
    description: the miniature reproduction's tasks
    protocol: fixed                  # or dev-grid (grid: {lr: [...]})
    seeds: [1, 2, 3]
    defaults: {max_length: 128}      # finetune settings every task gets
    tasks:
      - {name: bc5cdr, task: ner, data: bc5cdr, metric: entity_f1, family: ner,
         recipe: {lr: 1.0e-3}, lite: {max_train_samples: 2000, epochs: 2}}
    missing:                         # the benchmark's sets not available here
      - {name: GAD, family: re, reason: not redistributable}
    references:                      # published rows
      - {model: PubMedBERT, size: base (110 M), source: Gu et al. 2021 Table 6,
         scores: {bc5cdr: 93.33}, suite_score: 81.16}

``recipe`` and ``lite`` use ``finetune`` option names (snake_case); ``lite`` caps a task under
``--budget lite``. The metrics, families and own settings an entry may name are those its task
declares (:class:`bertkit.tasks.base.SuiteSpec`, read through the registry by
:mod:`bertkit.bench.declarations`): a similarity entry may set ``architecture`` (``bi-encoder`` or
``cross-encoder``), the model kind ``finetune sim --architecture`` trains. A file naming an unknown key, metric, family or protocol is refused by
:func:`parse_suite`; one naming an unregistered task or data set by :func:`check_suite`; both with
the file and line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from bertkit.bench.declarations import (declared_families, declared_metrics, declared_settings,
                                  metric_tasks, suite_spec)
from bertkit.errors import BertkitError

SUITE_DIR = Path(__file__).resolve().parent / "suites"

PROTOCOLS = ("fixed", "dev-grid")


@dataclass
class SuiteTask:
    """One task of a suite; ``line`` is where it starts in the file."""

    name: str
    task: str
    data: str
    metric: str
    family: str
    recipe: dict[str, Any] = field(default_factory=dict)
    lite: dict[str, Any] = field(default_factory=dict)
    line: int = 0


@dataclass
class Reference:
    """A published row: per-task scores in points, the suite score the paper gives (if any)."""

    model: str
    size: str
    source: str
    scores: dict[str, float]
    suite_score: float | None = None
    line: int = 0


@dataclass
class Suite:
    """A parsed suite (see the module docstring)."""

    name: str
    path: Path
    description: str
    tasks: list[SuiteTask]
    protocol: str = "fixed"
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3])
    grid: dict[str, list] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    missing: list[dict[str, str]] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)

    def task(self, name: str) -> SuiteTask:
        """The task called ``name``."""
        return next(t for t in self.tasks if t.name == name)

    def only(self, names: list[str]) -> "Suite":
        """The suite cut to the tasks ``names`` (in the suite's order), as lm-evaluation-harness's
        ``--tasks``: a long suite run a few tasks at a time into one results folder.

        Raises:
            BertkitError: a name that is not one of the suite's tasks.
        """
        known = [t.name for t in self.tasks]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise BertkitError(f"suite {self.name} has no task {', '.join(map(repr, unknown))}",
                               file=self.path, expected="one of " + ", ".join(known))
        return replace(self, tasks=[t for t in self.tasks if t.name in names])


class _Lines(dict):
    """A mapping that remembers the line of each key (``lines``) and its own (``line``)."""

    line = 0
    lines: dict


class _Loader(yaml.SafeLoader):
    pass


def _mapping(loader: _Loader, node: yaml.MappingNode) -> _Lines:
    loader.flatten_mapping(node)
    out = _Lines()
    out.line, out.lines = node.start_mark.line + 1, {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise BertkitError(f"'{key}' appears twice", file=loader.name,
                               line=key_node.start_mark.line + 1, expected="each key once")
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = key_node.start_mark.line + 1
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _read(path: Path) -> _Lines:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BertkitError(f"cannot read the suite: {exc.strerror}", file=path) from None
    loader = _Loader(text)
    loader.name = str(path)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise BertkitError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=path,
                           line=mark.line + 1 if mark else None) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise BertkitError("a suite must be a mapping (name, tasks, ...)", file=path, line=1)
    return data


def _keys(m: _Lines, allowed: dict[str, bool], path: Path, what: str) -> None:
    """Refuse unknown keys and missing required ones (``allowed``: key -> required)."""
    for key in m:
        if key not in allowed:
            raise BertkitError(f"unknown key '{key}' in {what}", file=path, line=m.lines[key],
                               expected="one of " + ", ".join(allowed))
    for key, required in allowed.items():
        if required and key not in m:
            raise BertkitError(f"{what} has no '{key}'", file=path, line=m.line,
                               expected=f"a '{key}' key")


def _choice(value: Any, choices, path: Path, line: int, what: str) -> str:
    if value not in choices:
        raise BertkitError(f"unknown {what} {value!r}", file=path, line=line,
                           expected="one of " + ", ".join(choices))
    return value


BENCH_SETS = {"data": "the task's 'data'", "model": "--encoder", "seed": "the suite's 'seeds'",
              "seeds": "the suite's 'seeds'", "output_dir": "bench (runs/ENC/TASK/seed-N)",
              "overwrite": "bench", "resume": "bench run --resume"}
"""Finetune settings a suite may not set in defaults, recipes, lite caps or the grid: bench sets
them for each stage (and would otherwise replace them silently, or train other seeds)."""


def _settings(m: Any, path: Path, line: int, what: str) -> dict[str, Any]:
    if m is None:
        return {}
    if not isinstance(m, dict):
        raise BertkitError(f"'{what}' must be a mapping of finetune settings", file=path, line=line)
    out = {str(k).replace("-", "_"): v for k, v in m.items()}
    for key in out:
        if key in BENCH_SETS:
            raise BertkitError(f"'{what}' sets {key!r}, which bench sets for each stage from "
                               f"{BENCH_SETS[key]}", file=path, line=line,
                               expected="finetune settings other than " + ", ".join(BENCH_SETS))
    return out


def parse_suite(path: str | Path) -> Suite:
    """Read and check a suite file's structure (keys, metrics, families, protocol, seeds).

    Raises:
        BertkitError: with the file and line of an unknown key, metric, family or protocol, a
            missing required key, a duplicate task name, a reference naming no suite task, or
            a task entry whose registered task declares no suite (or not its metric).
    """
    path = Path(path)
    m = _read(path)
    _keys(m, {"name": False, "description": False, "protocol": False, "seeds": False,
              "grid": False, "defaults": False, "tasks": True, "missing": False,
              "references": False}, path, "the suite")
    protocol = _choice(m.get("protocol", "fixed"), PROTOCOLS, path, m.lines.get("protocol", 1),
                       "protocol")
    seeds = _seeds(m, path)
    grid = _grid(m, path, protocol)
    if not isinstance(m["tasks"], list) or not m["tasks"]:
        raise BertkitError("'tasks' must be a non-empty list", file=path, line=m.lines["tasks"])
    tasks: list[SuiteTask] = []
    for t in m["tasks"]:
        tasks.append(_task(t, path, m.lines["tasks"], tasks))
    return Suite(str(m.get("name", path.stem)), path, str(m.get("description", "")), tasks,
                 protocol, seeds, grid, _settings(m.get("defaults"), path,
                                                  m.lines.get("defaults", 1), "defaults"),
                 _missing(m, path), _references(m, path, tasks))


def _seeds(m: _Lines, path: Path) -> list[int]:
    """The suite's ``seeds``: a list of distinct integers, or a count N (1..N)."""
    seeds = m.get("seeds", [1, 2, 3])
    if isinstance(seeds, int) and seeds >= 1:
        seeds = list(range(1, seeds + 1))
    if not (isinstance(seeds, list) and seeds and all(isinstance(s, int) for s in seeds)):
        raise BertkitError("'seeds' must be a list of integers or a count", file=path,
                           line=m.lines.get("seeds"), expected="e.g. [1, 2, 3] or 5")
    if len(set(seeds)) != len(seeds):
        raise BertkitError(f"'seeds' repeats a seed: {seeds} (two runs with one seed would "
                           "count one result twice)", file=path, line=m.lines.get("seeds"),
                           expected="distinct seeds, e.g. [1, 2, 3]")
    return seeds


def _grid(m: _Lines, path: Path, protocol: str) -> dict[str, list]:
    """The suite's ``grid``: one setting and its distinct values; required by dev-grid."""
    grid = _settings(m.get("grid"), path, m.lines.get("grid", 1), "grid")
    if len(grid) > 1:
        raise BertkitError(f"'grid' names {len(grid)} settings; dev-grid searches one",
                           file=path, line=m.lines.get("grid"), expected="e.g. {lr: [1e-4, 3e-4]}")
    for key, values in grid.items():
        if not isinstance(values, list) or not values or len(set(map(str, values))) != len(values):
            raise BertkitError(f"grid {key}: {values!r} is not a list of distinct values",
                               file=path, line=m.lines.get("grid"),
                               expected="e.g. {lr: [1e-4, 3e-4]}")
    if protocol == "dev-grid" and not grid:
        raise BertkitError("protocol dev-grid needs a 'grid' (e.g. {lr: [1e-4, 3e-4, 1e-3]})",
                           file=path, line=m.lines["protocol"])
    return grid


def _task(t: Any, path: Path, line: int, before: list[SuiteTask]) -> SuiteTask:
    """One task entry, its metric, family and own settings checked against what its task
    declares (:class:`bertkit.tasks.base.SuiteSpec`); ``before``: the entries already read."""
    if not isinstance(t, dict):
        raise BertkitError("each task must be a mapping", file=path, line=line)
    own = declared_settings()
    _keys(t, {"name": False, "task": True, "data": True, "metric": True, "family": True,
              **{key: False for key in own}, "recipe": False, "lite": False}, path, "a task")
    metric = _metric(t, path)
    name = str(t.get("name", t["data"]))
    if any(x.name == name for x in before):
        raise BertkitError(f"two tasks named {name!r}", file=path, line=t.line,
                           expected="a distinct 'name' for each task")
    recipe = _settings(t.get("recipe"), path, t.lines.get("recipe", t.line), "recipe")
    for key, declaring in own.items():  # a task's own setting (sim: architecture)
        if key in t:
            if t["task"] not in declaring:
                raise BertkitError(f"task {name}: {key!r} is a setting of "
                                   f"{' or '.join(declaring)} tasks, not of {t['task']!r}",
                                   file=path, line=t.lines[key])
            recipe[key] = _choice(t[key], suite_spec(t["task"]).settings[key], path,
                                  t.lines[key], key)
    return SuiteTask(
        name, str(t["task"]), str(t["data"]), metric,
        _choice(t["family"], declared_families(), path, t.lines["family"], "family"),
        recipe, _settings(t.get("lite"), path, t.lines.get("lite", t.line), "lite"), t.line)


def _metric(t: _Lines, path: Path) -> str:
    """A task entry's ``metric``: one some task declares, and its own task's (a task kind not
    registered is left to :func:`check_suite`, which names it)."""
    from bertkit.tasks.registry import task_names

    metric = _choice(t["metric"], declared_metrics(), path, t.lines["metric"], "metric")
    if t["task"] not in task_names():
        return metric
    try:
        spec = suite_spec(t["task"])
    except BertkitError as exc:  # a registered task that declares no suite
        raise BertkitError(exc.message, file=path, line=t.line, expected=exc.expected) from None
    if spec.metric(metric) is None:
        raise BertkitError(f"metric {metric} does not apply to task {t['task']!r}",
                           file=path, line=t.lines["metric"],
                           expected=f"a {' or '.join(metric_tasks(metric))} task")
    return metric


def _missing(m: _Lines, path: Path) -> list[dict[str, str]]:
    """The suite's ``missing`` entries (a benchmark's sets not available here)."""
    missing = []
    for x in m.get("missing") or []:
        if not isinstance(x, dict):
            raise BertkitError("each missing entry must be a mapping", file=path,
                               line=m.lines["missing"])
        _keys(x, {"name": True, "family": True, "reason": False}, path, "a missing entry")
        _choice(x["family"], declared_families(), path, x.lines["family"], "family")
        missing.append({k: str(v) for k, v in x.items()})
    return missing


def _references(m: _Lines, path: Path, tasks: list[SuiteTask]) -> list[Reference]:
    """The suite's published ``references``, each scoring only the suite's tasks."""
    references = []
    for r in m.get("references") or []:
        if not isinstance(r, dict):
            raise BertkitError("each reference must be a mapping", file=path,
                               line=m.lines["references"])
        _keys(r, {"model": True, "size": True, "source": True, "scores": True,
                  "suite_score": False}, path, "a reference")
        for key in r["scores"]:
            if key not in {t.name for t in tasks}:
                raise BertkitError(f"reference {r['model']} scores an unknown task {key!r}",
                                   file=path, line=r["scores"].lines[key],
                                   expected="one of " + ", ".join(t.name for t in tasks))
        references.append(Reference(str(r["model"]), str(r["size"]), str(r["source"]),
                                    {k: float(v) for k, v in r["scores"].items()},
                                    r.get("suite_score"), r.line))
    return references


def check_suite(suite: Suite) -> list[BertkitError]:
    """The suite's tasks whose task kind or data set is not registered, and a data set read by
    two tasks (one error each, with the file and line); empty when every task can run."""
    from bertkit.data.sets import registered
    from bertkit.tasks.registry import task_names

    problems = same_data(suite)
    for t in suite.tasks:
        if t.task not in task_names():
            problems.append(BertkitError(f"task {t.name}: unknown task kind {t.task!r}",
                                         file=suite.path, line=t.line,
                                         expected="one of " + ", ".join(task_names())))
        elif t.data not in registered(t.task):
            problems.append(BertkitError(
                f"task {t.name}: {t.data!r} is not a registered {t.task} data set",
                file=suite.path, line=t.line,
                expected="one of " + ", ".join(registered(t.task))))
    return problems


def same_data(suite: Suite) -> list[BertkitError]:
    """A task whose data set an earlier task of the suite already reads (the same task kind and
    data set, a folder by its resolved path): a copied entry whose ``data`` was not changed
    would train and score one set twice, under a name another paper's number stands beside,
    and count it twice in its family's mean (lm-evaluation-harness PR #3768). One error each,
    naming both tasks and their lines."""
    from bertkit.data.sets import canonical_data

    first: dict[tuple[str, str], SuiteTask] = {}
    problems = []
    for t in suite.tasks:
        was = first.setdefault((t.task, canonical_data(t.data)), t)
        if was is not t:
            problems.append(BertkitError(
                f"tasks {was.name} (line {was.line}) and {t.name} (line {t.line}) both read "
                f"{t.task} data set {t.data!r}: it would be trained and scored twice and "
                f"counted twice in its family's mean", file=suite.path, line=t.line,
                expected=f"each data set in one task: the data set {t.name} was meant to read, "
                         f"or no task {t.name}"))
    return problems


def suite_files() -> dict[str, Path]:
    """The shipped suites by name (``bertkit/bench/suites/*.yaml``)."""
    return {p.stem: p for p in sorted(SUITE_DIR.glob("*.yaml"))}


def find_suite(spec: str | Path) -> Path:
    """A suite file: a path, or a shipped suite's name.

    Raises:
        BertkitError: neither an existing file nor a shipped name.
    """
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    shipped = suite_files()
    if str(spec) in shipped:
        return shipped[str(spec)]
    raise BertkitError(f"unknown suite {str(spec)!r}",
                       expected="a suite file or one of: " + ", ".join(shipped))


def load_suite(spec: str | Path) -> Suite:
    """:func:`parse_suite` then :func:`check_suite`: a suite every task of which can run.

    Raises:
        BertkitError: the first problem found (file and line).
    """
    suite = parse_suite(find_suite(spec))
    problems = check_suite(suite)
    if problems:
        raise problems[0]
    return suite


def task_settings(suite: Suite, task: SuiteTask, budget: str) -> dict[str, Any]:
    """A task's settings from the suite: its defaults < the task's recipe < (``lite``) its caps."""
    out = {**suite.defaults, **task.recipe}
    if budget == "lite":
        out.update(task.lite)
    return out


def as_dict(suite: Suite) -> dict:
    """The suite as plain data (for ``bench.json`` and ``report.json``)."""
    d = dataclasses.asdict(suite)
    d["path"] = str(suite.path)
    return d
