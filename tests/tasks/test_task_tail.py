"""The Task class tail written once (issue 65): ``table_report``, ``task_functions`` and
``ModuleFunction`` in :mod:`bertkit.tasks.base`."""

from __future__ import annotations

import importlib
import inspect

import pytest

from bertkit.tasks.base import ModuleFunction, report_metrics, table_report, task_functions
from bertkit.tasks.registry import TASKS, get_task, task_names


@pytest.mark.parametrize("name", task_names())
def test_each_task_s_entry_points_are_its_module_s_functions(name):
    task = get_task(name)
    module = importlib.import_module(type(task).__module__)
    for verb in ("evaluate", "predict", "stream"):
        assert getattr(task, verb) is getattr(module, f"{verb}_{name}")
    # the CLI reads the real signature (coref's output format follows --output)
    assert ("output" in inspect.signature(task.stream).parameters) == (name == "coref")
    assert TASKS[name].task == f"{type(task).__module__}:TASK"


def test_a_missing_module_function_reads_as_no_attribute():
    class Probe:
        evaluate, predict, stream = task_functions("probe")

    with pytest.raises(AttributeError, match=f"{__name__} has no function stream_probe"):
        Probe().stream  # noqa: B018
    assert not hasattr(Probe(), "predict")  # cli/predict.py: no stream -> whole-file predict


def probe_stream(x):
    return x + 1


def test_a_module_function_is_found_when_read_and_on_the_class_too():
    class Probe:
        stream = ModuleFunction("probe_stream")

    assert Probe().stream is probe_stream and Probe.stream(1) == 2


def test_table_report_shows_a_run_s_test_metrics_and_evaluate_s_metrics_alike():
    seen = []

    def table(metrics, title):
        seen.append((metrics, title))
        return len(seen)

    class Probe:
        report = table_report(table)

    assert Probe().report({"test": {"f1": 0.5}, "dev": {"f1": 0.9}}, "t") == 1
    assert Probe().report({"f1": 0.4}, "e") == 2
    assert seen == [({"f1": 0.5}, "t"), ({"f1": 0.4}, "e")]
    assert report_metrics({"dev": {}, "test": {"x": 1}}) == {"x": 1}


def test_a_registered_set_off_the_data_root_names_the_root_and_the_layout(monkeypatch, tmp_path):
    from bertkit.errors import BertkitError
    from bertkit.tasks.re.data import LAYOUT, load_re_data

    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path))
    with pytest.raises(BertkitError) as err:
        load_re_data("chemprot", ("train",))
    assert str(err.value).startswith(
        f"data set 'chemprot' is not available: BERTKIT_DATA={tmp_path} has no re/chemprot/")
    assert f"BERTKIT_DATA pointing at a folder holding {LAYOUT}, or --data DIRECTORY" \
        in str(err.value)
