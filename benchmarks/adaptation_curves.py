"""Dev score after each fine-tuning epoch, per adaptation variant (from adaptation.py's runs).

Does adaptation make fine-tuning learn faster, or end higher? Reads the runs that ``benchmarks/adaptation.py`` left
in its ``--out-dir`` folders (``DIR/TASK/VARIANT/seed-N/metrics.jsonl``); trains nothing.

For each task and variant folder it prints the dev score (NER: entity F1; RE: micro-F1) after
each epoch as the mean over seeds with the per-seed values, and the difference from (a) at each
epoch. Variants are named ``FOLDER/VARIANT`` (the same variant name in two folders is two
settings, e.g. TAPT at two learning rates; the full path where two folders share a name), except
(a), whose runs are copied into each new ``--out-dir``: it is shown once, and every copy is
checked to hold the same scores for the seeds it shares with the others.

    python benchmarks/adaptation_curves.py /tmp/adapt-red /tmp/adapt-red-b /tmp/adapt-span \\
        --name adaptation_reduced_dev_curves
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interleave import logger  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "adaptation"
METRIC = {"ner": "f1", "re": "micro_f1", "dep": "las"}


def dev_curve(run: Path, metric: str) -> list[float]:
    """Dev ``metric`` (points) after each evaluation of one fine-tuning run, in step order.

    Raises:
        SystemExit: ``metrics.jsonl`` missing or unreadable, a line that is not a JSON object,
            a dev record without a numeric ``step`` and ``metric``, or no dev record at all.
    """
    path = run / "metrics.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        sys.exit(f"error: {path}: cannot read it ({exc}); expected a fine-tuning run's "
                 "metrics.jsonl")
    dev = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            record = exc.msg
        if not isinstance(record, dict):
            why = record if isinstance(record, str) else f"a JSON {type(record).__name__}"
            sys.exit(f"error: {path}:{number}: not a JSON object ({why}); expected one record "
                     "a line, as the training loop writes")
        if record.get("type") != "eval" or record.get("split") != "dev":
            continue
        values = (record.get("step"), record.get(metric))
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            sys.exit(f"error: {path}:{number}: a dev record without a numeric 'step' and "
                     f"'{metric}' (is this run under the right task folder?)")
        dev.append(values)
    if not dev:
        sys.exit(f"error: {path}: no dev evaluation record (expected type 'eval', split 'dev')")
    return [100 * value for _, value in sorted(dev)]


def seed_runs(variant: Path, metric: str) -> dict[int, list[float]]:
    """seed -> dev curve for the ``seed-N`` runs of one variant folder.

    Raises:
        SystemExit: a ``seed-*`` folder whose suffix is not an integer.
    """
    seeds = {}
    for run in sorted(variant.glob("seed-*")):
        suffix = run.name[len("seed-"):]
        if not suffix.isdigit():
            sys.exit(f"error: {run}: expected a folder named seed-N (N an integer), as "
                     "adaptation.py writes")
        if (run / "metrics.jsonl").is_file():
            seeds[int(suffix)] = dev_curve(run, metric)
    return seeds


def collect(dirs: list[Path]) -> dict[str, dict[str, dict[int, list[float]]]]:
    """task -> variant (``a`` or ``FOLDER/VARIANT``) -> seed -> dev curve.

    Raises:
        SystemExit: a folder that is not an ``--out-dir`` of adaptation.py, no runs at all, or a
            copy of (a)'s runs with other scores than those read before it.
    """
    found: dict[str, dict[str, dict[int, list[float]]]] = {}
    origin: dict[tuple[str, str], Path] = {}
    for root in dirs:
        if not any((root / task).is_dir() for task in METRIC):
            sys.exit(f"error: {root}: no {', '.join(METRIC)} folder (expected an --out-dir of "
                     "benchmarks/adaptation.py)")
        for task, metric in METRIC.items():
            for variant in sorted(p for p in (root / task).glob("*") if p.is_dir()):
                seeds = seed_runs(variant, metric)
                if not seeds:
                    continue
                runs = found.setdefault(task, {})
                if variant.name == "a":
                    known = runs.setdefault("a", {})
                    if any(known[s] != c for s, c in seeds.items() if s in known):
                        sys.exit(f"error: {variant}: (a)'s runs differ from those read before "
                                 "(expected copies of the same runs)")
                    known.update(seeds)
                    continue
                name = f"{root.name}/{variant.name}"
                if origin.setdefault((task, name), root) != root:
                    name = str(variant)
                runs[name] = seeds
    if not found:
        sys.exit("error: no fine-tuning runs (seed-N/metrics.jsonl) under "
                 + ", ".join(str(d) for d in dirs))
    return found


def epoch_stats(seeds: dict[int, list[float]]) -> list[tuple[float, float]]:
    """(mean, sample sd) over seeds after each epoch that every seed reached."""
    n = min(len(c) for c in seeds.values())
    values = [[c[e] for c in seeds.values()] for e in range(n)]
    return [(statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else 0.0) for v in values]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path, help="--out-dir folders of adaptation.py")
    ap.add_argument("--name", default=None, help="log name under benchmarks/results/adaptation/")
    args = ap.parse_args()
    found = collect(args.dirs)  # every check before the log is written
    log = logger(RESULTS / f"{args.name}.log") if args.name else print
    log("dev score after each fine-tuning epoch, mean over seeds (per seed); read from "
        + ", ".join(str(d) for d in args.dirs))
    for task, variants in found.items():
        base = epoch_stats(variants["a"]) if "a" in variants else None
        log(f"\n{task}: dev {METRIC[task]} (points)")
        for name, seeds in variants.items():
            stats = epoch_stats(seeds)
            per_seed = "; ".join(f"seed {s}: " + "/".join(f"{v:.1f}" for v in c)
                                 for s, c in sorted(seeds.items()))
            line = f"  {name:<24} epochs " + " / ".join(f"{m:5.1f}" for m, _ in stats)
            if base is not None and name != "a" and set(variants["a"]) == set(seeds):
                line += "   vs (a) " + " / ".join(
                    f"{m - bm:+5.1f}" + ("*" if abs(m - bm) <= max(sd, bsd) else " ")
                    for (m, sd), (bm, bsd) in zip(stats, base))
            log(line + f"   ({per_seed})")
        if base is not None:
            log("  * inside the larger seed spread (sd) of the variant and (a) at that epoch")


if __name__ == "__main__":
    main()
