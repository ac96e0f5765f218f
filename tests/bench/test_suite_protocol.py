"""A task enters a suite by what it declares (:class:`bertkit.tasks.base.SuiteSpec`), touching
no file of ``bertkit/bench/``: a registered task that declares nothing is refused by name
(never scored or counted as 0), and one that declares a metric runs through the bench runner,
its statistics, the paired bootstrap and the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from bertkit.bench import contamination
from bertkit.bench.encoders import resolve_all
from bertkit.bench.manifest import load_stage
from bertkit.bench.declarations import declared_families, declared_metrics, suite_metric
from bertkit.bench.report import build, markdown
from bertkit.bench.runner import Runner
from bertkit.bench.suite import parse_suite
from bertkit.errors import BertkitError
from bertkit.metrics.items import micro_f1
from bertkit.tasks import registry
from bertkit.tasks.base import SuiteMetric, SuiteSpec, score_scale

FAKE = str(Path(__file__).with_name("fake_finetune.py"))


def _span_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 3]`` per sentence of the stand-in's predictions: its one gold span found (TP) or
    missed (FN)."""
    blocks = (run_dir / "test_predictions.conll").read_text().strip().split("\n\n")
    rows = []
    for block in blocks:
        right = all(c[1] == c[2] for c in (line.split("\t") for line in block.splitlines()))
        rows.append((1.0, 0.0, 0.0) if right else (0.0, 0.0, 1.0))
    return np.asarray(rows)


TALLY = SimpleNamespace(
    name="tally", data_kind="tally", extensions=(".txt",),
    suite=SuiteSpec(metrics=(SuiteMetric("span_hits", "f1", "the stand-in's span F1",
                                         stats=_span_stats, score=micro_f1),),
                    families={"tallies": "the stand-in's family"},
                    test_texts=lambda path: path.read_text().splitlines()))
"""A task bench has never heard of, that declares a metric, a family and its test text."""
MUTE = SimpleNamespace(name="mute", data_kind="mute", extensions=(".txt",), suite=None)
"""A registered task that declares nothing a suite needs."""


@pytest.fixture
def tasks(monkeypatch):
    """``tally`` and ``mute`` registered beside the real tasks."""
    for name in ("tally", "mute"):
        monkeypatch.setitem(registry.TASKS, name, registry.TaskEntry(
            f"{__name__}:{name.upper()}", "bertkit.tasks.ner:NERConfig",
            "bertkit.tasks.ner:finetune_ner"))


def _suite_file(tmp_path, task: str, metric: str, family: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: t\nseeds: [1, 2]\ndefaults: {{epochs: 1}}\ntasks:\n"
                    f"  - {{name: one, task: {task}, data: toy, metric: {metric}, "
                    f"family: {family}}}\n", encoding="utf-8")
    return path


def test_a_task_that_declares_nothing_is_refused_by_name(tmp_path, tasks):
    with pytest.raises(BertkitError, match="task 'mute' declares nothing a suite needs") as err:
        parse_suite(_suite_file(tmp_path, "mute", "span_hits", "tallies"))
    assert err.value.line == 5 and err.value.file == str(tmp_path / "suite.yaml")
    with pytest.raises(BertkitError, match="task 'mute' declares nothing"):
        suite_metric("mute", "span_hits")
    test = tmp_path / "test.txt"
    test.write_text("one two three four five six\n")
    with pytest.raises(BertkitError, match="task 'mute' declares nothing"):  # never 0 of 0
        contamination.count("mute", test, (str(test),))
    record = tmp_path / "seed-1.json"
    record.write_text(json.dumps({"encoder": "a", "task": "one", "task_kind": "mute",
                                  "metric": "span_hits", "seed": 1, "run": "r", "score": 1.0,
                                  "overrides": {}, "test": {}}))
    with pytest.raises(BertkitError, match="metric 'span_hits' of task 'mute'"):
        load_stage(record)


def test_a_metric_or_test_text_the_task_does_not_declare_is_refused(tmp_path, tasks,
                                                                    monkeypatch):
    with pytest.raises(BertkitError, match="metric entity_f1 does not apply to task 'tally'"):
        parse_suite(_suite_file(tmp_path, "tally", "entity_f1", "tallies"))
    with pytest.raises(BertkitError, match="task 'tally' declares no suite metric 'f1'"):
        suite_metric("tally", "f1")
    monkeypatch.setattr(TALLY, "suite", SuiteSpec(TALLY.suite.metrics, TALLY.suite.families))
    with pytest.raises(BertkitError, match="task 'tally' declares no test text"):
        contamination.split_sentences("tally", tmp_path)


def test_a_declared_metric_runs_end_to_end_through_the_bench_scorer(
        tmp_path, tasks, tiny_encoder, still_encoder, monkeypatch):
    assert declared_metrics()["span_hits"] is TALLY.suite.metrics[0]
    assert declared_families()["tallies"] == "the stand-in's family"
    suite = parse_suite(_suite_file(tmp_path, "tally", "span_hits", "tallies"))
    original = Runner.command
    monkeypatch.setattr(Runner, "command",
                        lambda self, stage: [sys.executable, FAKE, *original(self, stage)[4:]])
    out = tmp_path / "out"
    Runner(suite, resolve_all([f"a={tiny_encoder}", f"b={still_encoder}"]), out).run()
    record = json.loads((out / "stages/a/one/seed-2.json").read_text())
    right = 6 + 2 % 3  # the stand-in's sentences tagged right for seed 2, of 10
    assert record["task_kind"] == "tally" and record["metric"] == "span_hits"
    assert record["score"] == pytest.approx(100 * 2 * right / (2 * right + 10 - right))
    with np.load(out / "stages/a/one" / record["items"]) as z:  # the declared statistics
        assert z["items"].shape == (10, 3) and z["items"][:, 0].sum() == right
    r = build(out, baseline="b")
    assert r["encoders"]["a"]["families"] == {"tallies": pytest.approx(
        r["encoders"]["a"]["tasks"]["one"]["mean"])}
    c = r["comparisons"]["a"]["one"]
    assert c["bootstrap"] is not None and c["delta"] == pytest.approx(0.0)  # one stand-in
    assert c["bootstrap"]["low"] == pytest.approx(0.0) and "no bootstrap" not in c["verdict"]
    assert "| one |" in markdown(r)


def test_the_declared_scales_are_the_tasks_headline_scales():
    """A suite metric's ``scale`` turns the task's own number into points, as its headline
    metric does (SQuAD and CoNLL F1 are in points already): the bootstrap's interval and the
    record's score share it."""
    for task in registry.task_names():
        kind = registry.get_task(task)
        for metric in kind.suite.metrics:
            declared = next((m.scale for m in kind.headline if m.key == metric.key), 100.0)
            assert metric.scale == declared == score_scale(kind, metric.key), (task, metric)
