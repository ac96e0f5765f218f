"""Dev score after each fine-tuning epoch, per adaptation variant: does adaptation make
fine-tuning learn faster, or end higher? Reads the runs that ``benchmarks/adaptation.py`` left
in its ``--out-dir`` folders (``DIR/TASK/VARIANT/seed-N/metrics.jsonl``); trains nothing.

For each task and variant folder it prints the dev score (NER: entity F1; RE: micro-F1) after
each epoch as the mean over seeds with the per-seed values, and the difference from (a) at each
epoch. Variants are named ``FOLDER/VARIANT`` (the same variant name in two folders is two
settings, e.g. TAPT at two learning rates), except (a), whose runs are copied into each new
``--out-dir``: it is shown once, and every copy is checked to hold the same scores.

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

RESULTS = Path(__file__).resolve().parent / "results"
METRIC = {"ner": "f1", "re": "micro_f1", "dep": "las"}


def dev_curve(run: Path, metric: str) -> list[float]:
    """Dev ``metric`` (points) after each evaluation of one fine-tuning run, in step order.

    Raises:
        SystemExit: ``metrics.jsonl`` missing, with a line that is not JSON, or holding no dev
            evaluation.
    """
    path = run / "metrics.jsonl"
    if not path.is_file():
        sys.exit(f"error: {path}: no such file (expected a fine-tuning run's metrics.jsonl)")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            sys.exit(f"error: {path}:{number}: not a JSON object ({exc.msg}); expected one "
                     "record a line, as the training loop writes")
    dev = [r for r in records if r.get("type") == "eval" and r.get("split") == "dev"]
    if not dev:
        sys.exit(f"error: {path}: no dev evaluation record (expected type 'eval', split 'dev')")
    return [100 * r[metric] for r in sorted(dev, key=lambda r: r["step"])]


def collect(dirs: list[Path]) -> dict[str, dict[str, dict[int, list[float]]]]:
    """task -> variant (``a`` or ``FOLDER/VARIANT``) -> seed -> dev curve.

    Raises:
        SystemExit: a folder that is not an ``--out-dir`` of adaptation.py, or a copy of (a)'s
            runs with other scores than the first one read.
    """
    found: dict[str, dict[str, dict[int, list[float]]]] = {}
    for root in dirs:
        if not any((root / task).is_dir() for task in METRIC):
            sys.exit(f"error: {root}: no {', '.join(METRIC)} folder (expected an --out-dir of "
                     "benchmarks/adaptation.py)")
        for task, metric in METRIC.items():
            for variant in sorted(p for p in (root / task).glob("*") if p.is_dir()):
                seeds = {int(s.name.split("-")[1]): dev_curve(s, metric)
                         for s in sorted(variant.glob("seed-*")) if (s / "metrics.jsonl").is_file()}
                if not seeds:
                    continue
                name = "a" if variant.name == "a" else f"{root.name}/{variant.name}"
                known = found.setdefault(task, {}).get(name)
                if known is not None and known != seeds:
                    sys.exit(f"error: {variant}: differs from the (a) runs read first (expected "
                             "copies of the same runs)")
                found[task].setdefault(name, seeds)
    return found


def mean(values: list[float]) -> float:
    return statistics.fmean(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path, help="--out-dir folders of adaptation.py")
    ap.add_argument("--name", default=None, help="log name under benchmarks/results/")
    args = ap.parse_args()
    log = logger(RESULTS / f"{args.name}.log") if args.name else print
    log("dev score after each fine-tuning epoch, mean over seeds (per seed); read from "
        + ", ".join(str(d) for d in args.dirs))
    for task, variants in collect(args.dirs).items():
        base = variants.get("a")
        log(f"\n{task}: dev {METRIC[task]} (points)")
        for name, seeds in variants.items():
            n = min(len(c) for c in seeds.values())
            means = [mean([c[e] for c in seeds.values()]) for e in range(n)]
            per_seed = "; ".join(f"seed {s}: " + "/".join(f"{v:.1f}" for v in c)
                                 for s, c in sorted(seeds.items()))
            line = f"  {name:<24} epochs " + " / ".join(f"{m:5.1f}" for m in means)
            if base is not None and name != "a" and set(base) == set(seeds):
                diffs = [m - mean([c[e] for c in base.values()]) for e, m in enumerate(means)
                         if e < min(len(c) for c in base.values())]
                line += "   vs (a) " + " / ".join(f"{d:+5.1f}" for d in diffs)
            log(line + f"   ({per_seed})")


if __name__ == "__main__":
    main()
