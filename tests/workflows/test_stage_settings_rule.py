"""One stage runner, one rule for "the settings changed" (issue 65): a `bertkit run` recipe stage,
a `bertkit adapt` stage and a `bench run` stage each keep a finished stage on an unchanged rerun,
and refuse a changed setting with the same message, naming the stage, the key and both values."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from bertkit.workflows import recipes
from bertkit.errors import BertkitError
from bertkit.workflows.stages import (SettingsChanged, read_record, recorded_stage,
                                      settings_changes)
from tests.bench.test_runner import _calls, _suite, fake  # noqa: F401 - the fixture

ONE_SEED = """\
name: t
seeds: [1]
defaults: {epochs: 1, lr: 1.0e-4}
tasks:
  - {name: ner-a, task: ner, data: bc5cdr, metric: entity_f1, family: ner}
references:
  - {model: Ref, size: base (110 M), source: paper, scores: {ner-a: 90.0}, suite_score: 90.0}
"""


@dataclass
class FakeConfig:
    lr: float = 1e-3
    output_dir: str | None = None
    overwrite: bool = False
    resume: bool = False
    device: str = "cpu"


def test_a_recipe_stage_is_kept_unchanged_and_refused_changed(tmp_path, monkeypatch):
    calls = []

    def fake_run(cfg, console):
        calls.append(cfg.lr)
        return {"lr": cfg.lr}

    here = sys.modules[__name__]
    monkeypatch.setattr(here, "_fake_run", fake_run, raising=False)
    monkeypatch.setitem(recipes.COMMANDS, "finetune fake",
                        (f"{__name__}:FakeConfig", f"{__name__}:_fake_run"))
    path = tmp_path / "r.yaml"
    path.write_text("stages:\n  - {name: one, command: finetune fake, settings: {lr: 0.001}}\n"
                    "  - {name: two, command: finetune fake, settings: {lr: 0.001}}\n")
    out = tmp_path / "runs"
    assert recipes.run_recipe(recipes.load(path), out) == {"one": {"lr": 1e-3}, "two": {"lr": 1e-3}}
    # the same recipe again, on another device (where a stage runs, not what it makes): kept
    again = recipes.apply_overrides(recipes.load(path), ["device=cuda"])
    assert recipes.run_recipe(again, out) == {"one": {"lr": 1e-3}, "two": {"lr": 1e-3}}
    assert calls == [1e-3, 1e-3]
    changed = recipes.apply_overrides(recipes.load(path), ["two.lr=0.002"])
    with pytest.raises(SettingsChanged) as refused:
        recipes.run_recipe(changed, out)
    assert "stage two finished with other settings: lr: 0.001 -> 0.002" in refused.value.message
    assert "--set two.overwrite=true" in refused.value.expected
    assert [c.key for c in refused.value.changes] == ["lr"] and calls == [1e-3, 1e-3]
    assert read_record(out / "two" / "stage.json")["settings"]["lr"] == 1e-3  # nothing replaced
    rerun = recipes.apply_overrides(recipes.load(path), ["two.lr=0.002", "two.overwrite=true"])
    assert recipes.run_recipe(rerun, out)["two"] == {"lr": 2e-3}


def test_an_adapt_stage_is_kept_unchanged_and_refused_changed(tmp_path, monkeypatch):
    from bertkit.vocab import extend
    from bertkit.workflows.adapt import extend_stage

    calls = []

    def extend_model(model, out, add, vocab, corpus, overwrite):
        calls.append(add)
        return {"old_size": 10, "new_size": 10 + add, "added": add, "seconds": 0.0, "words": []}

    monkeypatch.setattr(extend, "extend_model", extend_model)
    cfg = SimpleNamespace(extend_vocab=5, extend_vocab_from="scivocab", overwrite=False)
    folder = tmp_path / "vocab"
    first = extend_stage(cfg, "base", [], folder)
    assert extend_stage(cfg, "base", [], folder) == first and calls == [5]  # kept
    with pytest.raises(SettingsChanged) as refused:
        extend_stage(SimpleNamespace(**{**vars(cfg), "extend_vocab": 7}), "base", [], folder)
    assert "stage vocabulary extension finished with other settings: add: 5 -> 7" \
        in refused.value.message
    assert "--overwrite to run every stage again" in refused.value.expected
    assert [c.key for c in refused.value.changes] == ["add"] and calls == [5]
    overwrite = SimpleNamespace(**{**vars(cfg), "extend_vocab": 7, "overwrite": True})
    assert extend_stage(overwrite, "base", [], folder)[1]["added"] == 7


def test_a_bench_stage_is_kept_unchanged_and_refused_changed(tmp_path, tiny_encoder,
                                                             fake):  # noqa: F811
    from bertkit.bench.encoders import resolve_all
    from bertkit.bench.runner import Runner

    out, encoders = tmp_path / "out", resolve_all([f"a={tiny_encoder}"])
    assert Runner(_suite(tmp_path, ONE_SEED), encoders, out, jobs=1).run()["finished"] == 1
    assert Runner(_suite(tmp_path, ONE_SEED), encoders, out, jobs=1).run() == {
        "finished": 0, "kept": 1, "failed": 0}
    changed = _suite(tmp_path, ONE_SEED.replace("lr: 1.0e-4}", "lr: 3.0e-4}"))
    with pytest.raises(SettingsChanged) as refused:
        Runner(changed, encoders, out, jobs=1).run()
    assert "stage a/ner-a/seed-1 finished with other settings: lr: 0.0001 -> 0.0003" \
        in refused.value.message
    assert [c.key for c in refused.value.changes] == ["lr"] and len(_calls(fake)) == 1


def test_the_rule_compares_what_a_stage_makes():
    """Settings of where a stage writes or shows things do not count; a key one side lacks is
    read at its default; nested settings are named by their path; tuples equal lists."""
    recorded = {"lr": 1e-4, "device": "cpu", "out": "a", "grid": {"lr": 1, "wd": 0},
                "layers": [1, 2]}
    requested = {"lr": 1e-4, "device": "cuda", "out": "b", "grid": {"lr": 2, "wd": 0},
                 "layers": (1, 2), "warmup": 0.1, "pool": None}
    assert [str(c) for c in settings_changes(recorded, requested, {"warmup": 0.1})] == \
        ["grid.lr: 1 -> 2"]
    assert [str(c) for c in settings_changes(recorded, requested)] == \
        ["grid.lr: 1 -> 2", "warmup: None -> 0.1"]
    assert [str(c) for c in settings_changes({"input": "a1"}, {"input": "b2"})] == \
        ["input: its input model was produced again since"]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"settings": 3}'])
def test_an_unreadable_stage_record_is_named_not_a_traceback(tmp_path, text):
    record = tmp_path / "stage.json"
    record.write_text(text)
    with pytest.raises(BertkitError) as err:
        recorded_stage("s", record, {"lr": 1})
    assert err.value.file == str(record) and "stage record" in err.value.message
    assert "removed to run it again" in err.value.expected
    assert record.read_text() == text
