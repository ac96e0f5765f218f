"""Shards into one output, and ``--jobs N`` (N shard processes on one machine, then the merge).

A shard run (``--shard I/N``) writes ``OUTPUT.shard-I-of-N`` (:func:`~bertkit.predict.driver.
shard_output`) and keeps its state file, which lists the byte range of each of its chunks.
:func:`merge_shards` checks that the N shards are all there, finished, and made from one input
and one model with one chunk size, then writes the chunks in input order (chunk ``c`` from shard
``c % N + 1``), so the merged file is the file one unsharded run writes, byte for byte.
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path
from typing import Callable

from bertkit.errors import BertkitError
from bertkit.io import atomic_path
from bertkit.predict.driver import shard_output
from bertkit.predict.state import load_state, log_path, state_path


def find_shards(output: str | Path) -> list[Path]:
    """The shard outputs of ``output`` by the naming convention, in shard order.

    Raises:
        BertkitError: none found, shards of several counts, or a missing shard.
    """
    out = Path(output)
    stem, gz = (out.name[:-3], ".gz") if out.name.endswith(".gz") else (out.name, "")
    pattern = re.compile(re.escape(stem) + r"\.shard-(\d+)-of-(\d+)" + re.escape(gz) + "$")
    found = {}
    for p in out.parent.glob(f"{stem}.shard-*"):
        m = pattern.match(p.name)
        if m:
            found[(int(m[1]), int(m[2]))] = p
    counts = {n for _, n in found}
    if not found:
        raise BertkitError("no shard outputs found", file=out,
                           expected=f"{shard_output(out, (1, 2)).name} ... from --shard I/N runs")
    if len(counts) > 1:
        raise BertkitError(f"shards of different counts ({sorted(counts)}) beside it", file=out,
                           expected="the shards of one --shard I/N split")
    n = counts.pop()
    missing = [i for i in range(1, n + 1) if (i, n) not in found]
    if missing:
        raise BertkitError(f"shard{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(map(str, missing))} of {n} missing", file=out,
                           expected=f"all {n} shard outputs (run the missing --shard I/{n})")
    return [found[(i, n)] for i in range(1, n + 1)]


def _check(states: list[dict], shards: list[Path]) -> None:
    first = states[0]
    for path, st in zip(shards, states):
        if not st.get("complete"):
            raise BertkitError("this shard is unfinished", file=path,
                               expected="a finished shard (continue it with --resume)")
        for key in ("input", "model"):
            if st[key] != first[key]:
                raise BertkitError(f"made from another {key} than {shards[0].name}", file=path,
                                   expected="shards of one input and one model")
        mine, theirs = st["settings"], first["settings"]
        differ = [f"{k}: {theirs.get(k)!r} there, {mine.get(k)!r} here"
                  for k in sorted(set(mine) | set(theirs))
                  if k != "shard" and mine.get(k) != theirs.get(k)]
        if differ:
            raise BertkitError(f"made with other settings than {shards[0].name} ("
                               + "; ".join(differ) + ")", file=path,
                               expected="shards of one predict command")


def merge_shards(output: str | Path, keep: bool = False) -> dict:
    """Merge the shards of ``output`` (found by :func:`find_shards`) into ``output``, atomically;
    the shards and their state files are removed unless ``keep``.

    Returns:
        ``{"shards": N, "chunks": C, "skipped": [[line, reason], ...]}``.

    Raises:
        BertkitError: shards missing, unfinished, or from different inputs, models or settings.
    """
    out = Path(output)
    shards = find_shards(out)
    states = [load_state(state_path(p)) for p in shards]
    if any(s is None for s in states):
        bad = shards[[s is None for s in states].index(True)]
        raise BertkitError("no state file beside this shard", file=bad,
                           expected=f"{state_path(bad).name} (written by the shard's run)")
    _check(states, shards)
    sep = states[0].get("separator", "")
    ranges = sorted((c, i, b, e) for i, st in enumerate(states) for c, b, e in st["chunks"])
    gz = out.name.endswith(".gz")
    first = True
    handles = [open(p, "rb") for p in shards]
    try:
        with atomic_path(out) as tmp, open(tmp, "wb") as dest:
            for _, i, begin, end in ranges:
                handles[i].seek(begin)
                data = handles[i].read(end - begin)
                if not data:
                    continue
                text = (gzip.decompress(data) if gz else data).decode("utf-8")
                if first and sep and text.startswith(sep):  # shards prefix every record
                    text = text[len(sep):]
                first = False
                data = text.encode("utf-8")
                dest.write(gzip.compress(data, mtime=0) if gz else data)
    finally:
        for h in handles:
            h.close()
    if not keep:
        for p in shards:
            p.unlink()
            state_path(p).unlink()
            log_path(state_path(p)).unlink(missing_ok=True)
    skipped = sorted(x for st in states for x in st.get("skipped", []))
    return {"shards": len(shards), "chunks": len(ranges), "skipped": skipped}


def run_jobs(work: Callable[[tuple[int, int]], None], jobs: int, output: str | Path) -> dict:
    """Run ``work((I, N))`` for each shard I of N = ``jobs`` in its own process (spawned, one
    intra-op thread each), then :func:`merge_shards`.

    ``work`` must be picklable (a module-level function or a ``functools.partial`` of one).

    Raises:
        BertkitError: a shard process failed (its exit code; its own message went to standard
            error); the finished shards stay for a ``--resume``.
    """
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_job, args=(work, (i, jobs)), name=f"bertkit-shard-{i}")
             for i in range(1, jobs + 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [(i + 1, p.exitcode) for i, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        raise BertkitError(
            "shard " + ", ".join(f"{i}/{jobs} exited with {code}" for i, code in failed),
            file=Path(output), expected="every shard to finish (rerun the same command with "
                                        "--resume to continue the unfinished shards)")
    return merge_shards(output)


def _job(work: Callable[[tuple[int, int]], None], shard: tuple[int, int]) -> None:
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        work(shard)
    except BertkitError as exc:
        import sys

        print(f"error: shard {shard[0]}/{shard[1]}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
