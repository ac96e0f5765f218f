"""``predict ner --executor submitit-local|slurm --shards N``: the shards as submitit jobs, then
the merge (submitit's LocalExecutor here: CI has no Slurm), and the option's refusals."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from tests.predict.conftest import text_input
from tests.predict.fake_shard import fake_shard

runner = CliRunner()


def _predict(model, inp, *args):
    return runner.invoke(app, ["predict", "ner", "-m", str(model), "-i", str(inp), "--device",
                               "cpu", "-b", "4", *map(str, args)])


@pytest.mark.slow
def test_three_shard_jobs_give_the_unsharded_file_byte_for_byte(tmp_path, ner_model):
    pytest.importorskip("submitit")
    inp = text_input(tmp_path / "in.txt", 40)
    one, three = tmp_path / "one.conll", tmp_path / "three.conll"
    assert _predict(ner_model, inp, "-o", one, "--chunk-size", "5").exit_code == 0
    res = _predict(ner_model, inp, "-o", three, "--chunk-size", "5", "--executor",
                   "submitit-local", "--shards", "3", "--slurm-cpus-per-job", "1")
    assert res.exit_code == 0, res.output
    assert three.read_bytes() == one.read_bytes() and "merged 3 shards" in res.output
    folder = tmp_path / "three.conll.submitit"  # submitit's files and logs, the options
    recorded = json.loads((folder / "executor.json").read_text())
    assert recorded["options"]["executor"] == "submitit-local"
    assert len(list(folder.glob("*_log.out"))) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "in.txt", "one.conll", "three.conll", "three.conll.submitit"]  # no shard left


@pytest.mark.parametrize("args, words", [
    (("--shards", "3", "-o", "OUT"), "--shards needs --executor slurm or submitit-local"),
    (("--executor", "submitit-local", "--shards", "2"), "--executor submitit-local with no "
                                                        "--output"),
    (("--executor", "submitit-local", "--jobs", "2", "-o", "OUT"),
     "--executor submitit-local with --jobs"),
    (("--executor", "submitit-local", "--shard", "1/2", "-o", "OUT"),
     "--executor submitit-local with --shard"),
    (("--executor", "slurm", "--shards", "2", "-o", "OUT"), "sbatch and srun not on PATH"),
])
def test_executor_option_errors_come_before_the_model_is_loaded(tmp_path, monkeypatch, args,
                                                                words):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, no srun
    inp = text_input(tmp_path / "in.txt", 5)
    res = _predict(tmp_path / "no-model", inp,
                   *[str(tmp_path / "o") if a == "OUT" else a for a in args])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and words in text and "no-model" not in text, text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]  # nothing written


def test_slurm_without_submitit_names_the_extra_and_the_local_alternative(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)
    inp = text_input(tmp_path / "in.txt", 5)
    res = _predict(tmp_path / "no-model", inp, "--executor", "submitit-local", "--shards", "2",
                   "-o", tmp_path / "o")
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "pip install 'bertkit[slurm]'" in text, text
    assert "--executor local" in text and not (tmp_path / "o.submitit").exists()


@pytest.mark.slow
def test_a_failed_shard_job_is_named_and_the_others_finish(tmp_path):
    pytest.importorskip("submitit")
    import functools

    from bertkit.errors import BertkitError
    from bertkit.jobs.executors import ExecutorSettings
    from bertkit.predict.cluster import run_shards

    settings = ExecutorSettings(executor="submitit-local", slurm_cpus_per_job=1)
    with pytest.raises(BertkitError) as err:
        run_shards(functools.partial(fake_shard, str(tmp_path)), 3, tmp_path / "out.jsonl", settings,
                   poll=0.2)
    assert err.value.message == f"shard 2/3: {tmp_path}/in.txt:7: made to fail"
    assert "--resume" in err.value.expected
    assert sorted(p.name for p in tmp_path.glob("shard-*")) == ["shard-1-of-3", "shard-3-of-3"]
    assert json.loads((tmp_path / "out.jsonl.submitit/executor.json").read_text())[
        "submitit"]["name"] == "bertkit-predict-out.jsonl"
