"""``predict --executor slurm|submitit-local --shards N``: the N shards of a streaming
``predict`` as one submitit job array (:class:`bertkit.jobs.executors.Submitit`), waited for; the
caller merges them (:func:`bertkit.predict.merge.merge_shards`), the file one unsharded run
writes, byte for byte."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bertkit.errors import BertkitError
from bertkit.jobs.executors import ExecutorSettings, Outcome, Submitit, record


@dataclass
class ShardJob:
    """Shard ``shard`` = (I, N) of a ``predict``: ``work(shard)`` in a submitit job with the
    job's cores as its threads; returns None, or the BertkitError's text."""

    work: Callable[[tuple[int, int]], None]
    shard: tuple[int, int]
    threads: int = 1

    def __call__(self) -> str | None:
        import torch

        os.environ["OMP_NUM_THREADS"] = str(self.threads)
        torch.set_num_threads(self.threads)
        try:
            self.work(self.shard)
        except BertkitError as exc:
            return f"shard {self.shard[0]}/{self.shard[1]}: {exc}"
        return None


def run_shards(work: Callable[[tuple[int, int]], None], shards: int, output: Path,
               s: ExecutorSettings, poll: float | None = None) -> None:
    """``predict --executor slurm|submitit-local --shards N``: the N shards as one array (their
    submitit files in ``OUTPUT.submitit/``, the options in its ``executor.json``), waited for.
    The caller merges them (:func:`bertkit.predict.merge.merge_shards`).

    Raises:
        BertkitError: a shard failed or its job ended unfinished (the finished shards stay:
            the same command with ``--resume`` continues the others).
    """
    folder = Path(f"{output}.submitit")
    runner = Submitit(s, folder, f"bertkit-predict-{Path(output).name}", poll)
    record(folder, s, runner.parameters["name"])
    failures: list[str] = []

    def finished(i: int, out: Outcome) -> None:
        if out.code != 0:
            failures.append(out.note or f"shard {i + 1}/{shards} failed")

    runner.run([ShardJob(work, (i, shards), s.slurm_cpus_per_job)  # type: ignore[misc]
                for i in range(1, shards + 1)], finished)
    if failures:
        raise BertkitError("; ".join(failures), file=Path(output),
                           expected="every shard to finish (rerun the same command with "
                                    "--resume to continue the unfinished shards)")
