"""Intrinsic check of released miniature encoders (issue 43, question 2): the MLM loss on the
scientific and the general corpus's valid split, 15% token masking, measured exactly as
``reproduce_v1.py``'s ``intrinsic-ENC`` stages did (``bertkit pretrain`` for one step at lr 1e-12,
seed 42, fp32: its ``results.json``'s ``valid_initial`` is the loss before that step), so the
figures sit beside the README's MLM loss column.

    python benchmarks/mlm_loss.py S G S-half G+D37 G+D37sv \\
        -o benchmarks/results/reproduce-v2/mlm-loss.json --work /tmp/mlm-loss

Each encoder is ``benchmarks/encoders/ENC`` (fp16 weights loaded as fp32); results merge into the
JSON (an encoder measured again replaces its entry), with the wall time and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VALID = {"scientific": "corpus/valid.txt", "general": "corpus-general/valid.txt"}


def measure(encoder: Path, valid: Path, out: Path) -> dict:
    """The valid MLM loss, accuracy and perplexity of ``encoder`` on ``valid`` (one
    ``bertkit pretrain`` step at lr 1e-12; the figures are from before the step)."""
    cmd = [sys.executable, "-m", "bertkit", "pretrain", "--model", str(encoder), "--corpus",
           str(valid), "--valid", str(valid), "--masking", "token", "--mask-prob", "0.15",
           "--max-steps", "1", "--lr", "1e-12", "--seed", "42", "--precision", "fp32",
           "--device", "cpu", "-o", str(out), "--overwrite"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    v = json.loads((out / "results.json").read_text(encoding="utf-8"))["valid_initial"]
    return {"loss": round(v["loss"], 4), "accuracy": round(v["accuracy"], 4),
            "perplexity": round(v.get("perplexity", float("nan")), 2), "command": " ".join(cmd[1:])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("encoders", nargs="+", help="names under benchmarks/encoders")
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/mlm-loss"))
    args = ap.parse_args()
    data = Path(os.environ.get("BERTKIT_DATA", HERE.parent.parent / "shared" / "data"))
    result = json.loads(args.output.read_text(encoding="utf-8")) if args.output.is_file() else {}
    for enc in args.encoders:
        start, load = time.time(), os.getloadavg()
        entry = {name: measure(HERE / "encoders" / enc, data / rel,
                               args.work / f"{enc}-{name}") for name, rel in VALID.items()}
        entry.update(seconds=round(time.time() - start, 1), load_before=[round(x, 2) for x in load],
                     load_after=[round(x, 2) for x in os.getloadavg()])
        result[enc] = entry
        print(f"{enc}: scientific {entry['scientific']['loss']:.4f} / general "
              f"{entry['general']['loss']:.4f} ({entry['seconds']:.0f} s)", flush=True)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.output.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        tmp.replace(args.output)


if __name__ == "__main__":
    main()
