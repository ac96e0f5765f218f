"""``bertkit bench status DIR``: each stage of a results folder by state, read from its files.

A stage is **done** when its result file is there (``stages/ENC/TASK/seed-N.json``); else its
job's state file (``runs/ENC/TASK/seed-N.job.json``, :class:`bertkit.jobs.executors.Job`) says where it
stands: **running** (submitted and waiting, or its command running; with the job id, or the
process id on this machine), **failed** (its command ended without a result, or its job or
process is gone: the tail of its log); a stage with neither is **pending**. ``bench run`` into
the folder again runs the pending and failed ones.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.bench.manifest import load_manifest
from bertkit.errors import BertkitError
from bertkit.jobs.executors import alive, job_state

STATES = ("done", "running", "failed", "pending")


def _tail(log: Path, lines: int) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    said = [x for x in text.splitlines() if x.strip()]
    return " | ".join(said[-lines:]) if said else "(empty log)"


def _state(result: Path, log: Path, lines: int) -> tuple[str, str]:
    """(state, detail) of one stage from its files."""
    if result.is_file():
        return "done", ""
    job = job_state(log.with_suffix(".job.json"))
    if job is None:
        return ("failed", "no exit recorded; log: " + _tail(log, lines)) if log.is_file() \
            else ("pending", "")
    job_id, where = job.get("job_id"), job.get("host")
    named = f"job {job_id}" if job_id else f"pid {job.get('pid')} on {where}"
    if job.get("state") == "submitted":
        return ("running", f"{named} (submitted)") if alive(job) else \
            ("failed", f"{named} ended before its command started")
    if job.get("state") == "running":
        if not alive(job):
            return "failed", f"{named} gone before its command ended; log: " + _tail(log, lines)
        return "running", named + (f" on {where}" if job_id else "")
    code = job.get("exit")
    said = f"exit {code}" if code != 0 else "ended without a result recorded"
    return "failed", f"{named}, {said}; log: " + _tail(log, lines)


def stage_states(out: Path, lines: int = 3) -> list[dict]:
    """Every stage of the results folder ``out``: those its suite, encoders and seeds make
    (``bench.json``) and any other found on disk (more seeds, dev-grid points), sorted.

    Returns:
        ``[{"stage": "ENC/TASK/seed-N", "state": one of STATES, "detail": text}]``; a failed
        stage's detail ends with the last ``lines`` lines of its log.

    Raises:
        BertkitError: no ``bench.json`` (not a bench run's folder) or an unreadable one.
    """
    out = Path(out)
    if not (out / "bench.json").is_file():
        raise BertkitError("no bench.json: not a bench run's results folder", file=out,
                           expected="the -o folder of bertkit bench run")
    m = load_manifest(out / "bench.json")
    stems = {(enc, t["name"], f"seed-{s}") for enc in m["encoders"]
             for t in m["suite"].get("tasks", []) for s in m["suite"].get("seeds", [])}
    for top, pattern in (("stages", "*/*/*.json"), ("runs", "*/*/*.yaml")):
        for p in (out / top).glob(pattern):
            if not p.name.endswith((".job.json", ".items.npz")):
                stems.add((p.parent.parent.name, p.parent.name, p.stem))
    rows = []
    for enc, task, stem in sorted(stems):
        rel = Path(enc, task)
        state, detail = _state(out / "stages" / rel / f"{stem}.json",
                               out / "runs" / rel / f"{stem}.log", lines)
        rows.append({"stage": f"{enc}/{task}/{stem}", "state": state, "detail": detail})
    return rows
