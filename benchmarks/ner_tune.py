"""Choose bertkit's default BC5CDR recipe on the dev split only (the test split is never read).

Each configuration trains on train, evaluates dev after every epoch, and reports its best dev
entity F1 (strict IOB2 and seqeval default mode) and the epoch reaching it.

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/ner_tune.py [--grid "lr=1e-4,crf=0" ...] [--epochs 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.tasks.ner import NERConfig  # noqa: E402
from bertkit.tasks.ner import task as ner_task  # noqa: E402

DEFAULT_GRID = ["lr=1e-4,crf=0", "lr=2e-4,crf=0", "lr=1e-4,crf=1"]


def parse(spec: str) -> dict:
    out = {}
    for part in spec.split(","):
        key, value = part.split("=")
        out[key] = bool(int(value)) if key == "crf" else float(value) if key == "lr" else int(value)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", nargs="*", default=DEFAULT_GRID)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--data", default="bc5cdr")
    args = ap.parse_args()
    real_loader = ner_task.load_ner_data

    def without_test(data, splits=("train", "dev", "test")):
        got = real_loader(data, ("train", "dev"))
        got.splits["test"] = got.splits["dev"][:1]  # test is never scored here
        return got

    ner_task.load_ner_data = without_test
    rows = []
    for spec in args.grid:
        settings = parse(spec)
        with tempfile.TemporaryDirectory() as tmp:
            cfg = NERConfig(data=args.data, epochs=args.epochs, batch_size=args.batch_size,
                            output_dir=tmp, logging_steps=10**9, **settings)
            res = ner_task.finetune_ner(cfg)
        dev = res["dev"]
        rows.append({"settings": spec, "epochs": args.epochs, "best_epoch": res["best_epoch"],
                     "dev_f1": dev["f1"], "dev_conlleval_f1": dev["conlleval_f1"],
                     "train_seconds": res["train_seconds"]})
        print(f"{spec:<24} epochs {args.epochs}: best dev F1 {100 * dev['f1']:.2f} strict / "
              f"{100 * dev['conlleval_f1']:.2f} default mode at epoch {res['best_epoch']} "
              f"({res['train_seconds']:.0f} s)", flush=True)
    best = max(rows, key=lambda r: r["dev_f1"])
    print("best on dev:", json.dumps(best))


if __name__ == "__main__":
    main()
