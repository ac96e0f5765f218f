"""``bench run --executor``: a suite's stages as submitit jobs (its LocalExecutor here, CI has no
Slurm), the Slurm submission checked against a stand-in ``sbatch``, ``bench status``, and the
refusals where submitit or Slurm is missing."""

from __future__ import annotations

import json
import os
import pickle
import signal
import stat
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.bench.encoders import resolve_all
from bertkit.bench.report import build, markdown
from bertkit.bench.runner import Runner
from bertkit.bench.status import stage_states
from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.jobs.executors import ExecutorSettings, Outcome, outcome
from tests.bench.test_runner import SUITE, _calls, _suite, fake  # noqa: F401 (fake: a fixture)

pytest.importorskip("submitit")

TWO_TASKS = SUITE.replace("references:", """\
  - {name: ner-b, task: ner, data: ncbi-disease, metric: entity_f1, family: ner}
references:""")
LOCAL = ExecutorSettings(executor="submitit-local", slurm_max_running=2,
                         slurm_cpus_per_job=1)


def _stage_files(out: Path) -> dict[str, dict]:
    """The stage records less what differs between two runs of one stage (its time, folder)."""
    records = {}
    for p in sorted((out / "stages").rglob("*.json")):
        r = json.loads(p.read_text())
        r.pop("seconds")
        records[p.relative_to(out).as_posix()] = json.loads(json.dumps(r).replace(str(out), "OUT"))
    return records


def test_a_suite_through_the_executor_gives_the_files_and_report_of_jobs_1(
        tmp_path, tiny_encoder, fake):
    suite = tmp_path / "suite.yaml"
    suite.write_text(TWO_TASKS)
    cli = CliRunner()
    outs = {}
    for name, how in (("jobs1", ["--jobs", "1"]),
                      ("submitit", ["--executor", "submitit-local", "--slurm-cpus-per-job", "1",
                                    "--slurm-max-running", "2"])):
        outs[name] = tmp_path / name
        res = cli.invoke(app, ["bench", "run", str(suite), "-e", f"a={tiny_encoder}", "-o",
                               str(outs[name]), "--no-report", *how])
        assert res.exit_code == 0, res.output
        assert "stages: 4 run, 0 kept" in " ".join(res.output.split())
    one, sub = outs["jobs1"], outs["submitit"]
    assert len(_stage_files(one)) == 4 and _stage_files(sub) == _stage_files(one)
    assert markdown(build(sub)).replace(str(sub), "OUT") == \
        markdown(build(one)).replace(str(one), "OUT")
    recorded = json.loads((sub / "executor.json").read_text())
    assert recorded["options"]["executor"] == "submitit-local" and recorded["folder"] == "submitit"
    assert recorded["submitit"]["slurm_array_parallelism"] == 2
    assert "gpus_per_node" not in recorded["submitit"]  # no GPU asked: no --gpus-per-node=0
    assert json.loads((one / "executor.json").read_text())["options"]["executor"] == "local"
    assert list((sub / "submitit").glob("*_log.out"))  # submitit's log of each job, kept
    assert {r["state"] for r in stage_states(sub)} == {"done"}
    assert len(_calls(fake)) == 8


@pytest.mark.parametrize("sig, said", [(signal.SIGKILL, "exit -9"),
                                       (signal.SIGTERM, "stopped (exit -15: cancelled, preempted")])
def test_a_job_killed_half_way_leaves_its_stage_pending_and_a_rerun_finishes_it(
        tmp_path, tiny_encoder, fake, monkeypatch, sig, said):
    out, encoders = tmp_path / "out", resolve_all([f"a={tiny_encoder}"])
    monkeypatch.setenv("FAKE_FINETUNE_SLEEP", "60:2")  # seed 2's fine-tune takes a minute
    errors: list[BertkitError] = []

    def run():
        try:
            Runner(_suite(tmp_path), encoders, out, executor_settings=LOCAL).run()
        except BertkitError as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    state_file = out / "runs/a/ner-a/seed-2.job.json"
    deadline = time.time() + 60
    started = out / "runs/a/ner-a/seed-2/config.yaml"  # the fine-tune is under way
    while time.time() < deadline and not (started.is_file() and state_file.is_file()
                                          and json.loads(state_file.read_text())["state"]
                                          == "running"):
        time.sleep(0.2)
    job = json.loads(state_file.read_text())
    states = {r["stage"]: r for r in stage_states(out)}
    assert states["a/ner-a/seed-2"]["state"] == "running"
    assert f"job {job['job_id']}" in states["a/ner-a/seed-2"]["detail"]
    os.kill(job["pid"], sig)  # the fine-tune, half way
    thread.join(60)
    assert not thread.is_alive() and len(errors) == 1
    assert "1 stage(s) failed" in errors[0].message and said in errors[0].message
    assert (out / "stages/a/ner-a/seed-1.json").is_file()
    assert not (out / "stages/a/ner-a/seed-2.json").exists()  # pending, not half-written
    states = {r["stage"]: r for r in stage_states(out)}
    assert states["a/ner-a/seed-1"]["state"] == "done"
    assert states["a/ner-a/seed-2"]["state"] == "failed"
    monkeypatch.delenv("FAKE_FINETUNE_SLEEP")
    assert Runner(_suite(tmp_path), encoders, out, executor_settings=LOCAL).run() == {
        "finished": 1, "kept": 1, "failed": 0}
    assert [c[-1] for c in _calls(fake)] == ["--overwrite"] * 3


def test_a_job_that_ends_unfinished_is_a_failure_naming_it_and_its_log():
    class Handle:
        job_id = "77_3"

        class paths:
            stderr = Path("/x/submitit/77_3_0_log.err")

        def result(self):
            raise RuntimeError("Job 77_3 (task: 0) with path ... has not produced any output "
                               "(state: NODE_FAIL)\nmore")

    ended = outcome(Handle())
    assert ended.code is None and ended.note.startswith("job 77_3 ended unfinished (Job 77_3")
    assert ended.note.endswith("its log: /x/submitit/77_3_0_log.err)")
    assert outcome(type("H", (), {"result": lambda self: Outcome(0, 2.5)})()) == Outcome(0, 2.5)


def _fake_slurm(tmp_path: Path, monkeypatch) -> Path:
    """``sbatch`` and ``srun`` stand-ins on PATH: sbatch keeps the file it is given and answers
    as Slurm does; returns the folder the files go to."""
    bin_dir, kept = tmp_path / "bin", tmp_path / "sbatch-files"
    bin_dir.mkdir()
    kept.mkdir()
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\ncp \"$1\" {kept}/$(ls {kept} | wc -l).sh\n"
                                    "echo 'Submitted batch job 4242'\n")
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return kept


def test_the_slurm_submission_of_a_suite_without_a_cluster(tmp_path, tiny_encoder, monkeypatch):
    kept = _fake_slurm(tmp_path, monkeypatch)
    out = tmp_path / "out"
    slurm = ExecutorSettings(executor="slurm", slurm_partition="gpu", slurm_account="lab",
                             slurm_gpus_per_job=1, slurm_cpus_per_job=8, slurm_mem_gb=32,
                             slurm_time=90, slurm_max_running=3)
    runner = Runner(_suite(tmp_path, TWO_TASKS), resolve_all([f"a={tiny_encoder}"]), out,
                    executor_settings=slurm)
    handles = []  # submitted, not waited for (no sacct here)
    monkeypatch.setattr(runner.executor, "run",
                        lambda jobs, finished: handles.extend(runner.executor.submit(jobs)))
    runner.run()
    assert [h.job_id for h in handles] == ["4242_0", "4242_1", "4242_2", "4242_3"]
    (sbatch,) = kept.iterdir()  # one array, not four jobs
    text = sbatch.read_text()
    for line in ("--array=0-3%3", "--partition=gpu", "--account=lab", "--gpus-per-node=1",
                 "--cpus-per-task=8", "--mem=32GB", "--time=90", "--job-name=bertkit-bench-t",
                 "--nodes=1", "--ntasks-per-node=1"):
        assert f"#SBATCH {line}\n" in text, line
    assert f"--output={out}/submitit/%A_%a_0_log.out" in text
    assert f"-u -m submitit.core._submit {out}/submitit" in text  # what each job runs
    submitted = pickle.loads((out / "submitit/4242_1_submitted.pkl").read_bytes())
    job = submitted.function
    assert job.argv[1:5] == ["-m", "bertkit", "finetune", "ner"]
    assert job.argv[5:] == ["--recipe", str(out / "runs/a/ner-a/seed-2.yaml"), "-o",
                            str(out / "runs/a/ner-a/seed-2"), "--overwrite"]
    assert job.env["OMP_NUM_THREADS"] == "8" and job.log == out / "runs/a/ner-a/seed-2.log"
    states = {r["stage"]: r for r in stage_states(out)}
    assert states["a/ner-b/seed-1"] == {"stage": "a/ner-b/seed-1", "state": "running",
                                        "detail": "job 4242_2 (submitted)"}
    assert not list(out.rglob("results.json")) and not (out / "stages").exists()  # none ran
    recorded = json.loads((out / "executor.json").read_text())
    assert recorded["submitit"] == {
        "name": "bertkit-bench-t", "timeout_min": 90, "cpus_per_task": 8, "gpus_per_node": 1,
        "tasks_per_node": 1, "nodes": 1, "slurm_array_parallelism": 3, "mem_gb": 32,
        "slurm_partition": "gpu", "slurm_account": "lab"}


def test_bench_status_through_the_cli(tmp_path, tiny_encoder, fake, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("FAKE_FINETUNE_FAIL", "2")
    with pytest.raises(BertkitError):
        Runner(_suite(tmp_path, TWO_TASKS), resolve_all([f"a={tiny_encoder}"]), out,
               tasks=_suite(tmp_path, TWO_TASKS).only(["ner-a"]).tasks).run()
    res = CliRunner().invoke(app, ["bench", "status", str(out)])
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert "2 done" not in text and "1 done, 0 running, 1 failed, 2 pending" in text
    assert "exit 1; log: error: made to fail" in text
    res = CliRunner().invoke(app, ["bench", "status", str(tmp_path)])
    assert res.exit_code == 1 and "not a bench run's results folder" in res.output


@pytest.mark.parametrize("missing, words", [
    ("submitit", "the submitit package (pip install 'bertkit[slurm]')"),
    ("sbatch", "sbatch and srun not on PATH"),
])
def test_slurm_where_submitit_or_sbatch_is_missing_is_refused_before_anything(
        tmp_path, tiny_encoder, fake, monkeypatch, missing, words):
    if missing == "submitit":
        _fake_slurm(tmp_path, monkeypatch)
        monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit: ImportError
    else:
        monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, no srun
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["bench", "run", str(tmp_path / "no-suite.yaml"), "-e",
                                   f"a={tiny_encoder}", "-o", str(out), "--executor", "slurm"])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and words in text and "--executor local" in text, text
    assert "Traceback" not in text and not out.exists() and _calls(fake) == []


def test_a_stage_whose_earlier_job_still_runs_is_not_started_twice(tmp_path, tiny_encoder, fake,
                                                                   monkeypatch):
    """Two jobs would write one run folder: a stage whose job (another bench run's process here,
    a queued Slurm job there) is still alive is refused with its id; once it is gone, it runs."""
    import socket
    import subprocess

    out, encoders = tmp_path / "out", resolve_all([f"a={tiny_encoder}"])
    monkeypatch.setenv("FAKE_FINETUNE_FAIL", "2")
    with pytest.raises(BertkitError, match="1 stage"):
        Runner(_suite(tmp_path), encoders, out).run()
    monkeypatch.delenv("FAKE_FINETUNE_FAIL")
    state = out / "runs/a/ner-a/seed-2.job.json"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state.write_text(json.dumps({"state": "running", "host": socket.gethostname(),
                                     "pid": other.pid, "job_id": None, "time": 0}))
        with pytest.raises(BertkitError, match=rf"still submitted or running from an earlier "
                                               rf"run: a/ner-a/seed-2 \(pid {other.pid} on"):
            Runner(_suite(tmp_path), encoders, out).run()
        assert len(_calls(fake)) == 2 and [r["state"] for r in stage_states(out)] == [
            "done", "running"]
    finally:
        other.kill()
        other.wait()
    assert Runner(_suite(tmp_path), encoders, out).run() == {"finished": 1, "kept": 1,
                                                             "failed": 0}


def test_whether_an_earlier_job_may_still_run(tmp_path, monkeypatch):
    """``alive``: ended in its state file or in submitit's files (the result pickle), or its
    process on this machine gone: no; a Slurm job elsewhere that nothing says ended: yes."""
    import socket
    import subprocess

    from bertkit.jobs.executors import alive

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    here = socket.gethostname()
    (tmp_path / "9_1_0_result.pkl").write_bytes(b"")
    monkeypatch.setenv("PATH", str(tmp_path))  # no sacct to ask
    assert not alive({"state": "ended", "exit": 0, "host": here, "pid": os.getpid()})
    assert alive({"state": "running", "host": here, "pid": os.getpid()})
    assert not alive({"state": "running", "host": here, "pid": gone.pid})
    assert not alive({"state": "submitted", "host": here, "job_id": str(gone.pid),
                      "folder": str(tmp_path), "executor": "submitit-local"})
    assert alive({"state": "submitted", "host": here, "job_id": "9_2", "folder": str(tmp_path),
                  "executor": "slurm"})
    assert not alive({"state": "running", "host": "node7", "pid": 5, "job_id": "9_1",
                      "folder": str(tmp_path), "executor": "slurm"})
    assert alive({"state": "running", "host": "node7", "pid": 5, "job_id": "9_2",
                  "folder": str(tmp_path), "executor": "slurm"})


def test_a_stage_that_finished_after_its_run_was_stopped_is_collected_not_trained_again(
        tmp_path, tiny_encoder, fake):
    """``bench run`` killed while its jobs went on: the jobs' runs finished, no result was
    written. A rerun writes the results from the runs; a stage whose recipe changed since
    trains again."""
    out, encoders = tmp_path / "out", resolve_all([f"a={tiny_encoder}"])
    Runner(_suite(tmp_path), encoders, out, executor_settings=LOCAL).run()
    kept = {p: json.loads(p.read_text()) for p in (out / "stages").rglob("*.json")}
    for p in kept:
        p.unlink()  # as if the submitter had died before writing them
    later = time.time() + 5
    os.utime(out / "runs/a/ner-a/seed-2.yaml", (later, later))  # written again since
    assert Runner(_suite(tmp_path), encoders, out).run()["finished"] == 2
    calls = _calls(fake)
    assert len(calls) == 3 and "seed-2" in calls[-1][calls[-1].index("-o") + 1]
    seed1 = json.loads((out / "stages/a/ner-a/seed-1.json").read_text())
    before = kept[out / "stages/a/ner-a/seed-1.json"]
    assert seed1["score"] == before["score"] and seed1["settings"] == before["settings"]
