"""What the side-by-side benchmarks share: the machine's load, the interleaved order of the sides,
the median (min-max) summary of repeated measurements, and the same first N examples of a JSONL
data set for every side.

Fairness rules (benchmarks/README.md): the sides alternate within one run (repeat 1: A, B, C;
repeat 2: C, B, A; ...), so a change of machine load hits every side; each measurement records
the 1-minute load average before and after; figures are medians with their min and max over
seeds or repeats, and a ratio is the ratio of the medians.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Callable, Sequence


def load1() -> float:
    """The 1-minute load average, rounded to 0.01."""
    return round(os.getloadavg()[0], 2)


def logger(path: Path) -> Callable[[str], None]:
    """A ``log(text)`` that prints ``text`` and rewrites the log file ``path`` with every line so
    far (a run cut off keeps what it printed). ``log.path`` is ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def log(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    log.path = path
    return log


def side_order(sides: Sequence[str], repeat: int) -> tuple[str, ...]:
    """The order of ``sides`` in the 0-based ``repeat``: as given on even repeats, reversed on odd.

    >>> side_order(("stock", "bertkit"), 1)
    ('bertkit', 'stock')
    """
    return tuple(sides) if repeat % 2 == 0 else tuple(reversed(sides))


def spread(values: Sequence[float]) -> str:
    """``median M (min a, max b)`` of ``values``, two decimals.

    >>> spread([3.0, 1.0, 2.0])
    'median    2.00 (min 1.00, max 3.00)'
    """
    return f"median {statistics.median(values):7.2f} (min {min(values):.2f}, max {max(values):.2f})"


def shared_note(before: float, after: float, threads: int) -> str:
    """Whether the machine was shared during a measurement: a 1-minute load average above the
    threads the benchmark itself uses (plus 0.5 for noise), before or after, marks it."""
    shared = max(before, after) > threads + 0.5
    return f"load {before}->{after}" + (" (SHARED: other work on the machine)" if shared else "")


def subset_dir(src: Path, out: Path, sizes: dict[str, int | None]) -> Path:
    """Copy the first N non-blank lines of each ``<split>.jsonl`` of ``src`` into ``out`` (a
    temporary folder; N None: all), so every side reads the same examples. Returns ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for split, n in sizes.items():
        lines = [x for x in (src / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
                 if x.strip()]
        (out / f"{split}.jsonl").write_text("\n".join(lines[:n] if n else lines) + "\n",
                                            encoding="utf-8")
    return out


def read_split(d: Path, split: str) -> list[dict]:
    """The records of ``d/<split>.jsonl`` (blank lines skipped)."""
    return [json.loads(x) for x in (d / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()]
