"""Summarise the per-seed JSON files of the old, one-seed-per-run ``ner_vs_stock.py`` (history).

``benchmarks/ner_vs_stock.py`` now runs the seeds itself, interleaved, and prints their summary
(``--seeds 1,2,3``); this script only re-reads the history runs of the README's three-seed
table, made before issue 16 by the script as it was then (``git show
07819f1:benchmarks/ner_vs_stock.py``, ``--seed S``: one run per seed, stock then bertkit).

Usage:
    python benchmarks/ner_seeds.py benchmarks/results/ner_vs_stock/ner_vs_stock_pack_seed*.json

Prints, per seed and as the mean over seeds: test entity F1 of both (seqeval default mode, as the
stock recipe reports, and strict IOB2), the training-throughput ratio and the prediction-speed
ratio (each ratio from the two runs of the same invocation).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="the per-seed JSON files of the old ner_vs_stock.py")
    paths = ap.parse_args(argv).paths
    rows = []
    for path in sorted(paths):
        run = json.loads(Path(path).read_text())
        s, b = run["stock"], run["bertkit"]
        rows.append({
            "run": Path(path).stem,
            "stock_f1": 100 * s["test"]["conlleval_f1"], "stock_strict": 100 * s["test"]["f1"],
            "bertkit_f1": 100 * b["test"]["conlleval_f1"], "bertkit_strict": 100 * b["test"]["f1"],
            "train_x": b["train_sentences_per_second"] / s["train_sentences_per_second"],
            "predict_x": s["predict_seconds"] / b["predict_seconds"],
        })
    head = f"{'run':<32} {'stock F1':>9} {'(strict)':>9} {'bertkit F1':>11} {'(strict)':>9} " \
           f"{'train x':>8} {'predict x':>10}"
    print(head)
    for r in rows + [{"run": f"mean of {len(rows)}",
                      **{k: statistics.mean(x[k] for x in rows) for k in rows[0] if k != "run"}}]:
        print(f"{r['run']:<32} {r['stock_f1']:9.2f} {r['stock_strict']:9.2f} {r['bertkit_f1']:11.2f} "
              f"{r['bertkit_strict']:9.2f} {r['train_x']:7.2f}x {r['predict_x']:9.2f}x")
    worst = min(r["bertkit_f1"] - r["stock_f1"] for r in rows)
    print(f"bertkit - stock F1 (default mode): worst seed {worst:+.2f} points; "
          f"slowest training ratio {min(r['train_x'] for r in rows):.2f}x; "
          f"slowest prediction ratio {min(r['predict_x'] for r in rows):.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
