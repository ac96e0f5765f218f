"""Issue 46: a run with no ``--model`` records the encoder it resolved (the packaged MiniLM's
path) in ``config.yaml``, never ``model: null``, for every task (QA's once
wrote null). The driver runs up to training, which is stopped, so no model is trained."""

from __future__ import annotations

import pytest
import yaml

from bertkit import training
from bertkit.data.sets import registered
from bertkit.encoders import default_model, resolve_model_source
from bertkit.tasks import driver
from bertkit.tasks.base import TaskData
from bertkit.tasks.registry import get_task, task_names


class _Stop(Exception):
    pass


class _Task:
    """The registered task with a ``prepare`` that builds nothing (what config.yaml records is
    the driver's)."""

    def __init__(self, task):
        self._task = task

    def __getattr__(self, name):
        return getattr(self._task, name)

    def prepare(self, cfg, model_name, data, runtime, console):
        return type("Prepared", (), {"summary": None, "model": None, "batches": None,
                                     "evaluate": None, "select_metric": None})()


@pytest.mark.parametrize("name", task_names())
def test_config_yaml_names_the_resolved_encoder_when_no_model_is_given(name, tmp_path,
                                                                       monkeypatch):
    task = get_task(name)
    monkeypatch.setattr(driver, "load_splits", lambda *a, **k: TaskData(
        splits={"train": [], "dev": [], "test": []}, sources={}, info={}))
    monkeypatch.setattr("bertkit.data.contamination.check_contamination", lambda *a, **k: {})

    def stop(*args, **kwargs):
        raise _Stop

    monkeypatch.setattr(training, "train", stop)
    cfg = task.config_class(data=registered(name)[0], output_dir=str(tmp_path / "run"),
                            device="cpu")
    assert cfg.model is None
    with pytest.raises(_Stop):
        driver._finetune_one(_Task(task), cfg)
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert saved["model"] == resolve_model_source(default_model())
    assert saved["model"] and "minilm" in saved["model"].lower()
