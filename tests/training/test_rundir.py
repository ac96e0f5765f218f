import pytest

from bertkit.errors import BertkitError
from bertkit.io import write_json
from bertkit.training.rundir import prepare_run_dir


def test_fresh_dir_created(tmp_path):
    assert prepare_run_dir(tmp_path / "a" / "b", resume=False, overwrite=False).is_dir()


def test_existing_run_refused_unless_resume_or_overwrite(tmp_path):
    write_json(tmp_path / "metrics.jsonl", {})
    with pytest.raises(BertkitError, match="already holds a run"):
        prepare_run_dir(tmp_path, resume=False, overwrite=False)
    assert prepare_run_dir(tmp_path, resume=True, overwrite=False) == tmp_path
    assert prepare_run_dir(tmp_path, resume=False, overwrite=True) == tmp_path


def test_resume_needs_a_run(tmp_path):
    with pytest.raises(BertkitError, match="no run to resume"):
        prepare_run_dir(tmp_path, resume=True, overwrite=False)


def test_unwritable_location_detected_before_training(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(BertkitError, match="cannot write to the output directory"):
        prepare_run_dir(blocker / "run", resume=False, overwrite=False)


def test_atomic_write_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "results.json"
    write_json(target, {"a": 1})
    with pytest.raises(TypeError):
        write_json(target, {"a": object()})
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_resume_refuses_other_settings_but_allows_output_ones(tmp_path):
    from bertkit.settings.layers import dump_yaml
    from bertkit.training.rundir import check_run_dir

    saved = {"data": "bc5cdr", "lr": 5e-05, "crf": False, "logging_steps": 50, "model": "m"}
    (tmp_path / "config.yaml").write_text(dump_yaml(saved))
    write_json(tmp_path / "metrics.jsonl", {})
    check_run_dir(tmp_path, True, False, {**saved, "logging_steps": 10, "device": "cpu"})
    with pytest.raises(BertkitError) as err:
        check_run_dir(tmp_path, True, False, {**saved, "data": "ncbi-disease", "lr": 1e-4})
    msg = str(err.value)
    assert "data: saved 'bc5cdr', now 'ncbi-disease'" in msg and "lr: saved 5e-05, now 0.0001" in msg
    assert "logging_steps" not in msg and "config.yaml" in msg


def test_resume_of_a_run_saved_before_a_setting_existed(tmp_path):
    """A run saved by an older bertkit lacks settings added since (e.g. finetune re's
    class_weights): at their default the resume goes on; at another value it is refused."""
    from bertkit.settings.layers import dump_yaml, field_defaults
    from bertkit.tasks.re.config import REConfig
    from bertkit.training.rundir import check_run_dir

    now = {"data": "chemprot", "lr": 2e-4, "class_weights": "none"}
    saved = {k: v for k, v in now.items() if k != "class_weights"}
    (tmp_path / "config.yaml").write_text(dump_yaml(saved))
    write_json(tmp_path / "metrics.jsonl", {})
    defaults = field_defaults(REConfig())
    assert defaults["class_weights"] == "none"
    check_run_dir(tmp_path, True, False, now, defaults)
    with pytest.raises(BertkitError, match="class_weights: saved None, now 'balanced'"):
        check_run_dir(tmp_path, True, False, {**now, "class_weights": "balanced"}, defaults)
    with pytest.raises(BertkitError, match="class_weights: saved None, now 'none'"):
        check_run_dir(tmp_path, True, False, now)  # without defaults: every difference counts


def test_a_failed_start_is_not_a_run(tmp_path):
    (tmp_path / "config.yaml").write_text("lr: 1\n")
    (tmp_path / "environment.json").write_text("{}")
    (tmp_path / "checkpoints").mkdir()
    assert prepare_run_dir(tmp_path, resume=False, overwrite=False) == tmp_path
    with pytest.raises(BertkitError, match="no run to resume"):
        prepare_run_dir(tmp_path, resume=True, overwrite=False)


def test_overwrite_removes_the_old_runs_files_only(tmp_path):
    for name in ("config.yaml", "results.json", "metrics.jsonl", "test_predictions.conll",
                 "notes.txt"):
        (tmp_path / name).write_text("old\n")
    (tmp_path / "checkpoints" / "step_30").mkdir(parents=True)
    (tmp_path / "model").mkdir()
    with pytest.raises(BertkitError, match="--resume and --overwrite together"):
        prepare_run_dir(tmp_path, resume=True, overwrite=True)
    assert (tmp_path / "checkpoints" / "step_30").is_dir()
    prepare_run_dir(tmp_path, resume=False, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_saved_settings_are_the_base_of_a_resumed_run(tmp_path):
    from bertkit.settings.layers import build_config, dump_yaml, field_names
    from bertkit.tasks.ner.config import NERConfig
    from bertkit.training.rundir import saved_settings

    (tmp_path / "config.yaml").write_text(dump_yaml(
        {"data": "/abs/d", "lr": 3e-4, "logging_steps": 7, "output_dir": "elsewhere",
         "resume": False, "sbo": True}))
    base = saved_settings(tmp_path, field_names(NERConfig))
    assert base == {"data": "/abs/d", "lr": 3e-4, "logging_steps": 7}
    cfg = build_config(NERConfig, base, {"resume": True, "output_dir": str(tmp_path),
                                         "logging_steps": 1})
    assert (cfg.data, cfg.lr, cfg.logging_steps, cfg.output_dir) == ("/abs/d", 3e-4, 1,
                                                                      str(tmp_path))
    assert saved_settings(tmp_path / "none", ["lr"]) is None


def test_resume_of_a_complete_run_is_not_an_error_and_writes_nothing(tmp_path, monkeypatch):
    from bertkit.training.rundir import RunComplete, check_run_dir

    (tmp_path / "config.yaml").write_text("lr: 0.001\n")
    write_json(tmp_path / "results.json", {"test": {"f1": 0.5}})
    before = sorted((p.name, p.stat().st_mtime_ns) for p in tmp_path.iterdir())
    with pytest.raises(RunComplete, match="run is complete") as err:
        prepare_run_dir(tmp_path, resume=True, overwrite=False)
    assert err.value.exit_code == 0 and str(tmp_path) in str(err.value)
    with pytest.raises(BertkitError, match="lr: saved 0.001"):  # changed settings: refused first
        check_run_dir(tmp_path, True, False, {"lr": 0.01})
    monkeypatch.setenv("RANK", "1")  # other ranks of a torchrun stop alike
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(RunComplete):
        check_run_dir(tmp_path, True, False)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in tmp_path.iterdir()) == before


def test_resume_may_change_the_budget_only_at_a_constant_rate(tmp_path):
    """--max-steps/--max-tokens/--epochs may change on --resume when every step's rate is the
    same for any budget (constant after a warm-up in steps); with a decay, or a warm-up given as
    a ratio of the run, it would change the rate of the steps to come, so it is refused."""
    from bertkit.settings.layers import dump_yaml
    from bertkit.training.rundir import budget_may_change, check_run_dir

    saved = {"lr": 1e-3, "lr_schedule": "constant", "warmup": 100, "max_steps": 9766,
             "max_tokens": 40_000_000, "epochs": 3}
    (tmp_path / "config.yaml").write_text(dump_yaml(saved))
    write_json(tmp_path / "metrics.jsonl", {})
    shorter = {**saved, "max_steps": 6500, "max_tokens": 26_624_000}
    check_run_dir(tmp_path, True, False, shorter)  # accepted
    assert budget_may_change(saved, shorter)
    for changed in ({"lr_schedule": "linear"}, {"warmup": 0.06}):
        (tmp_path / "config.yaml").write_text(dump_yaml({**saved, **changed}))
        with pytest.raises(BertkitError, match="max_steps: saved 9766, now 6500"):
            check_run_dir(tmp_path, True, False, {**shorter, **changed})
    (tmp_path / "config.yaml").write_text(dump_yaml(saved))
    with pytest.raises(BertkitError, match="warmup: saved 100, now 50"):  # the rate itself
        check_run_dir(tmp_path, True, False, {**shorter, "warmup": 50})
    assert not budget_may_change(saved, {**shorter, "warmup": 50})
