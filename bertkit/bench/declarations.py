"""The metrics and families a suite may name, read from the tasks' own declarations (the
field's metrics themselves are in :mod:`bertkit.metrics`).

A task declares what a suite needs (:class:`bertkit.tasks.base.SuiteSpec`, its ``suite``
attribute): the metrics a suite may name for it (:class:`~bertkit.tasks.base.SuiteMetric`: the
key of the task's own score in ``results.json``'s ``test``, its averaging, its scale to points,
its per-test-item statistics for the paired bootstrap and its constant-prediction floor), the
text of its test examples (the contamination check) and its families. ``bench`` reads these
through :func:`bertkit.tasks.registry.get_task` only and names no task (lm-evaluation-harness:
the task declares its metric and how to score an item; the harness never names a task). A task
that declares none, or a metric it does not declare, is refused by name.

``tests/bench/test_metrics.py`` checks that the statistics of a run give back the task's own
score.
"""

from __future__ import annotations

from typing import Any

from bertkit.errors import BertkitError

DECLARE = "a 'suite = SuiteSpec(...)' on the task's Task object (bertkit.tasks.base.SuiteSpec)"


def suite_spec(task: str) -> Any:
    """The :class:`~bertkit.tasks.base.SuiteSpec` the registered task ``task`` declares.

    Raises:
        BertkitError: ``task`` is not registered, or declares nothing a suite needs.
    """
    from bertkit.tasks.registry import get_task

    spec = getattr(get_task(task), "suite", None)
    if spec is None:
        raise BertkitError(f"task {task!r} declares nothing a suite needs (its metrics, test "
                           f"text, families), so no suite can enter it", expected=DECLARE)
    return spec


def suite_metric(task: str, name: str) -> Any:
    """The :class:`~bertkit.tasks.base.SuiteMetric` ``name`` of the registered task ``task``.

    Raises:
        BertkitError: ``task`` is not registered or declares no suite, or declares no metric
            ``name`` (the message lists those it declares).
    """
    spec = suite_spec(task)
    metric = spec.metric(name)
    if metric is None:
        raise BertkitError(f"task {task!r} declares no suite metric {name!r}",
                           expected="one of " + ", ".join(m.name for m in spec.metrics))
    return metric


def _declarations() -> dict[str, Any]:
    """``{task: SuiteSpec}`` of the registered tasks that declare one, in registry order."""
    from bertkit.tasks.registry import get_task, task_names

    found = {name: getattr(get_task(name), "suite", None) for name in task_names()}
    return {name: spec for name, spec in found.items() if spec is not None}


def declared_metrics() -> dict[str, Any]:
    """Every metric name some registered task declares, with the first such task's declaration
    (tasks sharing a name share its meaning: ``micro_f1``): for listings and a suite file's
    names before its task is known."""
    out: dict[str, Any] = {}
    for spec in _declarations().values():
        for metric in spec.metrics:
            out.setdefault(metric.name, metric)
    return out


def metric_tasks(name: str) -> list[str]:
    """The registered tasks that declare the metric ``name``, in registry order."""
    return [task for task, spec in _declarations().items() if spec.metric(name) is not None]


def declared_families() -> dict[str, str]:
    """``{family: description}`` of every family some registered task declares."""
    out: dict[str, str] = {}
    for spec in _declarations().values():
        for family, description in spec.families.items():
            out.setdefault(family, description)
    return out


def declared_settings() -> dict[str, list[str]]:
    """``{key: tasks}``: the suite-entry settings (``SuiteSpec.settings``) and the tasks that
    declare each, in registry order."""
    out: dict[str, list[str]] = {}
    for task, spec in _declarations().items():
        for key in spec.settings:
            out.setdefault(key, []).append(task)
    return out


def __getattr__(name: str):
    """``METRICS`` and ``FAMILIES``, the former tables, now read from the declarations
    (:func:`declared_metrics`, :func:`declared_families`)."""
    if name == "METRICS":
        return declared_metrics()
    if name == "FAMILIES":
        return declared_families()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
