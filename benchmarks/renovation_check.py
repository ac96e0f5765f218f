"""Issue 65's "behaviour unchanged": the README's main job (BC5CDR NER, the packaged MiniLM,
``recipes/finetune/bc5cdr-ner-minilm.yaml``) run from the tree before the renovation and from this
one, same seed, same precision, same threads, alternating, with the test entity F1 (expected
equal to the last digit: the same computation), the whole process's CPU seconds and the training
rate of each run, and the machine's load before each.

    python benchmarks/renovation_check.py --old-tree /tmp/old --pairs 1 --threads 1 \\
        --out benchmarks/results/renovation/
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cpu_step  # noqa: E402  (its run(): one main job from a tree, timed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old-tree", required=True, help="A checkout of the commit before the change.")
    ap.add_argument("--out", default=str(HERE / "results" / "renovation"))
    ap.add_argument("--pairs", type=int, default=1, help="Old/new pairs (order alternating).")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--precision", default="auto", help="auto: bf16 on AMX/AVX512-BF16 CPUs.")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of each run.")
    args = ap.parse_args(argv)
    cpu_step.THREADS = args.threads
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"cpu": cpu_step.cpu_name(), "seed": args.seed, "precision": args.precision,
              "threads": args.threads, "old_tree": args.old_tree, "new_tree": str(HERE.parent),
              "runs": []}
    extra = ["--precision", args.precision, "--seed", str(args.seed)]
    for i in range(args.pairs):
        sides = [("new", HERE.parent), ("old", Path(args.old_tree))]
        for side, tree in (sides if i % 2 == 0 else sides[::-1]):
            row = cpu_step.run(tree, f"main_{side}_{i + 1}", extra, out)
            report["runs"].append({"side": side, **row})
            (out / "renovation.json").write_text(json.dumps(report, indent=2) + "\n")
    f1 = {s: sorted({r["test_f1"] for r in report["runs"] if r["side"] == s}) for s in ("old", "new")}
    report["same_f1"] = f1["old"] == f1["new"]
    report["f1"] = f1
    (out / "renovation.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("same_f1", "f1")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
