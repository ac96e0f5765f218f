import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from bertkit import __version__
from bertkit.cli import app
from bertkit.training.devices import make_runtime
from tests.conftest import write_ner_dir

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def test_version_and_help_on_every_level():
    assert invoke("--version").output.strip() == f"bertkit {__version__}"
    for args in ([], ["finetune"], ["finetune", "ner"], ["evaluate", "ner"], ["predict", "ner"]):
        res = invoke(*args, "--help")
        assert res.exit_code == 0 and "Usage" in res.output


def test_python_dash_m():
    out = subprocess.run([sys.executable, "-m", "bertkit", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"bertkit {__version__}"


def test_bad_conll_is_a_message_not_a_traceback(tmp_path, tiny_encoder):
    d = write_ner_dir(tmp_path / "d", train="a\tO\nb\n")
    res = invoke("finetune", "ner", "--data", str(d), "--model", tiny_encoder, "-o", str(tmp_path / "run"))
    assert res.exit_code == 1
    assert f"{d / 'train.tsv'}:2: only one column" in res.output.replace("\n", "")
    assert "Traceback" not in res.output
    assert not (tmp_path / "run").exists()  # nothing written before the data was checked


def test_unknown_recipe_key(tmp_path, ner_dir):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("learning_rate: 1e-4\n")
    res = invoke("finetune", "ner", "--data", str(ner_dir), "--recipe", str(recipe))
    assert res.exit_code == 1 and "unknown option 'learning_rate'" in res.output


def test_finetune_evaluate_predict_tiny(tmp_path, ner_dir, tiny_encoder):
    run = tmp_path / "run"
    res = invoke("finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder, "-o", str(run),
                 "--epochs", "2", "--batch-size", "2", "--lr", "1e-3", "--crf", "--device", "cpu")
    assert res.exit_code == 0, res.output
    # the precision and why come first (bf16 on a CPU with AMX-BF16, fp32 elsewhere)
    said = "device cpu, " + make_runtime("cpu", "auto").describe().split(", ", 1)[1]
    assert said in res.output.splitlines()[:3], res.output
    for name in ("config.yaml", "metrics.jsonl", "results.json", "test_predictions.conll",
                 "model/config.json", "model/bertkit.json", "model/crf.safetensors"):
        assert (run / name).exists(), name
    results = json.loads((run / "results.json").read_text())
    assert set(results["test"]["per_type"]) <= {"Chemical", "Disease"}
    evals = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines()]
    assert [e["epoch"] for e in evals if e["type"] == "eval"] == [1, 2]
    pred_lines = (run / "test_predictions.conll").read_text().strip().split("\n\n")
    assert len(pred_lines) == 3 and all(len(l.split("\t")) == 3 for l in pred_lines[0].splitlines())

    # the same run directory again is refused; --overwrite is needed
    again = invoke("finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder, "-o", str(run))
    assert again.exit_code == 1 and "already holds a run" in again.output
    # a bare --resume takes the saved settings; a changed one is refused, the run left as it was
    saved = (run / "config.yaml").read_text()
    res = invoke("finetune", "ner", "--resume", "-o", str(run), "--lr", "5e-4")
    assert res.exit_code == 1 and "lr: saved 0.001, now 0.0005" in " ".join(res.output.split())
    # the run is complete: --resume says so and exits 0 without writing (issue 18)
    files = sorted((p.name, p.stat().st_mtime_ns) for p in run.iterdir())
    res = invoke("finetune", "ner", "--resume", "-o", str(run), "--logging-steps", "3")
    assert res.exit_code == 0, res.output
    assert "run is complete" in " ".join(res.output.split()) and "error" not in res.output
    assert (run / "config.yaml").read_text() == saved
    assert sorted((p.name, p.stat().st_mtime_ns) for p in run.iterdir()) == files

    res = invoke("evaluate", "ner", "--model", str(run), "--data", str(ner_dir), "--split", "dev",
                 "--output", str(tmp_path / "m.json"))
    assert res.exit_code == 0, res.output
    assert "micro (strict)" in res.output and said.split(", ", 1)[1] in res.output
    assert 0 <= json.loads((tmp_path / "m.json").read_text())["f1"] <= 1

    text = tmp_path / "in.txt"
    text.write_text("Aspirin induced renal failure .\n\n\u200b\nCisplatin \u200b nephrotoxicity\n",
                    encoding="utf-8")
    res = invoke("predict", "ner", "--model", str(run), "--input", str(text), "--format", "jsonl")
    assert res.exit_code == 0, res.output
    assert said.split(", ", 1)[1] in res.stderr and "precision" not in res.stdout  # a note, not output
    rows = [json.loads(l) for l in res.stdout.splitlines() if l.startswith("{")]
    assert [len(r["tags"]) for r in rows] == [len(r["tokens"]) for r in rows] == [5, 0, 0, 3]
    assert [r["line"] for r in rows] == [1, 2, 3, 4]  # output line N is input line N
    assert [r.get("empty", False) for r in rows] == [False, True, True, False]
    out = tmp_path / "pred.conll"
    res = invoke("predict", "ner", "--model", str(run), "--input", str(ner_dir / "test.tsv"), "-o", str(out))
    assert res.exit_code == 0 and len(out.read_text().strip().split("\n\n")) == 3


def test_predict_missing_model_and_input(tmp_path):
    (tmp_path / "x.txt").write_text("Aspirin .\n")  # the input exists: the model is missing
    res = invoke("predict", "ner", "--model", str(tmp_path), "--input", str(tmp_path / "x.txt"))
    assert res.exit_code == 1 and "no saved bertkit NER model" in res.output


def test_predict_and_evaluate_on_a_stopped_run_point_to_resume(tmp_path):
    run = tmp_path / "run"
    step = run / "checkpoints" / "step_40"
    step.mkdir(parents=True)
    (step / "state.pt").write_bytes(b"x")
    (step / "model.pt").write_bytes(b"x")
    (tmp_path / "x.txt").write_text("Aspirin .\n")
    for args in (("predict", "ner", "--model", str(run), "--input", str(tmp_path / "x.txt")),
                 ("evaluate", "re", "--model", str(run), "--data", "chemprot")):
        res = invoke(*args)
        assert res.exit_code == 1, res.output
        text = " ".join(res.output.split())
        assert "this run stopped at step 40: finish it with --resume" in text
        assert "stopped before it saved its model; last checkpoint: step_40" in text
        assert f"'bertkit finetune {args[1]}' command that started it, plus --resume" in text
    # the model/ folder of a stopped run (not written yet) says the same
    res = invoke("predict", "ner", "--model", str(run / "model"), "--input",
                 str(tmp_path / "x.txt"))
    assert res.exit_code == 1 and "this run stopped at step 40: finish it with --resume" in \
        " ".join(res.output.split())
    (run / "results.json").write_text("{}")  # a finished run without model/: the plain message
    res = invoke("predict", "ner", "--model", str(run), "--input", str(tmp_path / "x.txt"))
    assert res.exit_code == 1 and "no saved bertkit NER model" in res.output


def test_predict_on_a_multi_seed_root_names_the_seed_directories(tmp_path):
    from bertkit.tasks.common import META_FILE

    root = tmp_path / "seeds"
    for seed in (1, 2):
        (root / f"seed-{seed}" / "model").mkdir(parents=True)
        (root / f"seed-{seed}" / "model" / META_FILE).write_text('{"task": "ner"}')
    (root / "summary.json").write_text("{}")
    (tmp_path / "x.txt").write_text("Aspirin .\n")
    res = invoke("predict", "ner", "--model", str(root), "--input", str(tmp_path / "x.txt"))
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "multi-seed run (--seeds) with one model per seed (seed-1, seed-2)" in text
    assert "one seed's run directory, e.g." in text and "Traceback" not in res.output

    res = invoke("predict", "ner", "--model", str(tmp_path / "nothere"), "--input", str(tmp_path / "x.txt"))
    assert res.exit_code == 1 and "nothere: not found" in " ".join(res.output.split())
    (tmp_path / "mlm" / "model").mkdir(parents=True)  # a `bertkit pretrain` run
    (tmp_path / "mlm" / "model" / META_FILE).write_text('{"task": "pretrain"}')
    res = invoke("predict", "ner", "--model", str(tmp_path / "mlm"), "--input", str(tmp_path / "x.txt"))
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "saved model of bertkit pretrain (a masked LM), not of 'finetune ner'" in text


def test_recipe_value_of_wrong_type_is_refused_before_any_output(tmp_path, ner_dir):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("epochs: two\n")
    out = tmp_path / "run"
    res = invoke("finetune", "ner", "--data", str(ner_dir), "--recipe", str(recipe), "-o", str(out))
    assert res.exit_code == 1 and "option 'epochs' has the value 'two'" in res.output
    assert "expected an integer" in res.output and not out.exists()


def test_out_of_range_setting_named_before_any_output(tmp_path, ner_dir):
    out = tmp_path / "run"
    res = invoke("finetune", "ner", "--data", str(ner_dir), "--lr", "-1", "-o", str(out))
    assert res.exit_code == 1 and "--lr is -1.0" in res.output and not out.exists()


def test_yaml_syntax_error_is_one_line(tmp_path, ner_dir):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("epochs: [1\nlr: 2\n")
    res = invoke("finetune", "ner", "--data", str(ner_dir), "--recipe", str(recipe))
    assert res.exit_code == 1 and f"{recipe}:" in res.output and "not valid YAML" in res.output
    assert len(res.output.strip().splitlines()) <= 2


def test_unreachable_hub_model_fails_fast(tmp_path, ner_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from bertkit.encoders import hub_reachable

    hub_reachable.cache_clear()
    res = invoke("finetune", "ner", "--data", str(ner_dir), "--model", "no-such/model-xyz",
                 "-o", str(tmp_path / "run"))
    assert res.exit_code == 1 and "hub cannot be reached" in res.output
    assert not (tmp_path / "run").exists()


def test_predict_names_a_missing_input_before_loading_any_model(tmp_path):
    # the model does not exist either: the input is checked first, before any loading
    from typer.testing import CliRunner

    from bertkit.cli import app

    res = CliRunner().invoke(app, ["predict", "ner", "-m", str(tmp_path / "no-run"),
                                   "-i", str(tmp_path / "missing.txt")])
    assert res.exit_code == 1
    assert "missing.txt: file not found" in " ".join(res.output.split())
    assert "no saved" not in res.output


def test_ctrl_c_while_starting_up_exits_130_without_a_traceback(monkeypatch, capsys):
    """SIGINT while the CLI is still importing torch and transformers (the seconds after the
    command is typed) ends with a one-line message and status 130: the import of bertkit.cli is
    made to raise KeyboardInterrupt, as Ctrl-C does there."""
    import builtins

    from bertkit import _entry

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "bertkit.cli":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as stop:
        _entry.main()
    monkeypatch.setattr(builtins, "__import__", real_import)
    err = capsys.readouterr().err
    assert stop.value.code == 130 and err.strip() == "bertkit: interrupted (Ctrl-C)"
