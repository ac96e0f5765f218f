"""Mean and sd over seeds of ``results.json`` test scores, for runs made outside ``bertkit bench``
(e.g. the HoC recipe's three separate ``finetune cls`` runs, issue 42), so that a README figure
is printed by a script, not computed by hand.

    python benchmarks/seed_summary.py benchmarks/results/blurb/new-sets-minilm/hoc-10-epochs \\
        --metrics hoc_f1,macro_f1

Reads ``seed-*.results.json`` in the folder (or the files given), takes each metric from the
``test`` block (fractions, printed in points), and writes ``summary.json`` beside them: per
metric the scores by seed and ``bertkit.bench.stats.summary`` (mean, sample sd, n), plus each
run's best epoch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.bench.stats import summary  # noqa: E402
from bertkit.io import write_json  # noqa: E402


def summarise(files: list[Path], metrics: list[str]) -> dict:
    """``{"runs": [{file, best_epoch, metric: points}], metric: {mean, sd, n, scores}}``.

    Raises:
        SystemExit: a file without a ``test`` block holding a metric asked for.
    """
    runs = []
    for f in files:
        r = json.loads(f.read_text(encoding="utf-8"))
        row = {"file": f.name, "best_epoch": r.get("best_epoch")}
        for m in metrics:
            if m not in r.get("test", {}):
                sys.exit(f"{f}: no test {m!r} (expected a bertkit results.json with it)")
            row[m] = 100 * r["test"][m]
        runs.append(row)
    out = {"runs": runs}
    for m in metrics:
        scores = [row[m] for row in runs]
        out[m] = {**summary(scores), "scores": scores}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path, help="a folder of seed-*.results.json, or files")
    ap.add_argument("--metrics", default="macro_f1", help="test metrics, comma-separated")
    args = ap.parse_args()
    files = [f for p in args.paths for f in
             (sorted(p.glob("seed-*.results.json")) if p.is_dir() else [p])]
    if not files:
        sys.exit("no seed-*.results.json found")
    s = summarise(files, args.metrics.split(","))
    for m in args.metrics.split(","):
        print(f"{m}: {s[m]['mean']:.2f} ± {s[m]['sd']:.2f} (n={s[m]['n']}; " +
              ", ".join(f"{x:.2f}" for x in s[m]["scores"]) + ")")
    print("best epochs: " + ", ".join(str(r["best_epoch"]) for r in s["runs"]))
    folder = args.paths[0] if args.paths[0].is_dir() else args.paths[0].parent
    write_json(folder / "summary.json", s)


if __name__ == "__main__":
    main()
