"""What the side-by-side benchmarks share: the machine's load (the one load reader), the
interleaved order of the sides, the median (min-max) summary of repeated measurements, and the
same first N examples of a JSONL data set for every side. The stock Hugging Face Trainer set-up
they compare against is in ``_stock.py``.

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


def load_average() -> dict:
    """The 1-, 5- and 15-minute load averages (rounded to 0.01) and the CPU count, as the logs
    record them: ``{"load_1m", "load_5m", "load_15m", "cpus"}``."""
    one, five, fifteen = (round(x, 2) for x in os.getloadavg())
    return {"load_1m": one, "load_5m": five, "load_15m": fifteen, "cpus": os.cpu_count()}


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


def read_same_settings(paths: Sequence[Path], free: set[str],
                       defaults: dict | None = None) -> list[dict]:
    """The contents of several ``--json`` files of one benchmark, whose saved arguments agree
    except those in ``free``; ``defaults`` stand in for arguments a file lacks (options added
    after it was written).

    Raises:
        SystemExit: a missing or unreadable file, a file of another kind, or a file run with
            other settings (the first one named).
    """
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise SystemExit(f"error: no such --merge file: {', '.join(missing)} (expected the --json "
                         f"files of earlier runs of this script)")
    saved = []
    for p in paths:
        try:
            saved.append(json.loads(Path(p).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise SystemExit(f"error: {p}: not a --json file of this benchmark ({exc})") from None
        if not isinstance(saved[-1], dict) or not isinstance(saved[-1].get("args"), dict):
            raise SystemExit(f"error: {p}: not a --json file of this benchmark (no saved "
                             f"arguments)")
    defaults = defaults or {}
    first = {k: v for k, v in {**defaults, **saved[0]["args"]}.items() if k not in free}
    for path, run in zip(paths, saved):
        now = {k: v for k, v in {**defaults, **run["args"]}.items() if k not in free}
        changed = sorted(k for k in set(first) | set(now) if first.get(k) != now.get(k))
        if changed:
            raise SystemExit(f"error: {path} was run with other settings ({changed[0]}: "
                             f"{now.get(changed[0])!r}, first file {first.get(changed[0])!r})")
    return saved


def merge_runs(paths: Sequence[Path], free: set[str], log,
               side_setting: Callable[[dict, str], object] | None = None
               ) -> tuple[dict[str, dict[int, dict]], list[int], list[dict]]:
    """Read several ``--json`` files of one benchmark (e.g. seeds run side by side in separate
    processes) into ``results[side][seed]``, logging each file.

    Every saved argument but those in ``free`` must agree between the files; a side in several
    files must agree in ``side_setting(args, side)`` (e.g. its learning rate) where given. A side
    without a run for every seed found is left out, and the log says so.

    Returns:
        (results, the sorted seeds, the files' contents).

    Raises:
        SystemExit: a missing file, other settings, or a seed of a side in two files.
    """
    saved = read_same_settings(paths, free)
    results: dict[str, dict[int, dict]] = {}
    per_side: dict[str, tuple[object, Path]] = {}
    log(f"merged {len(paths)} runs: " + ", ".join(str(p) for p in paths))
    for path, run in zip(paths, saved):
        for side, by_seed in run["runs"].items():
            if side_setting is not None:
                value = side_setting(run["args"], side)
                if side in per_side and per_side[side][0] != value:
                    raise SystemExit(f"error: {path} ran {side} with {value!r}, "
                                     f"{per_side[side][1]} with {per_side[side][0]!r}")
                per_side.setdefault(side, (value, path))
            for seed, r in by_seed.items():
                if int(seed) in results.get(side, {}):
                    raise SystemExit(f"error: seed {seed} of {side} is in two of the files")
                results.setdefault(side, {})[int(seed)] = r
        note = "" if side_setting is None else "; " + ", ".join(
            f"{side} {per_side[side][0]}" for side in run["runs"])
        log(f"  {path}: {run.get('label', '')}{'; ' if run.get('label') else ''}seeds "
            f"{run['args']['seeds']}; threads {run['args'].get('threads')}{note}")
    seeds = sorted({s for by_seed in results.values() for s in by_seed})
    for side in [side for side in results if set(results[side]) != set(seeds)]:
        lacks = ", ".join(str(s) for s in seeds if s not in results[side])
        log(f"  {side} left out of the summary: no run for seed {lacks} (cut off, or not run)")
        del results[side]
    if not results:
        raise SystemExit("error: no side has a run for every seed in the files")
    return results, seeds, saved
