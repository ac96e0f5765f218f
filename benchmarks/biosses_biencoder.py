"""BIOSSES with the packaged MiniLM as a bi-encoder (issue 63): the zero-shot row, a recipe chosen
on dev, then test seeds.

1. Zero-shot: ``evaluate sim --zero-shot`` on dev and test (the encoder as given: mean pooling
   and its Normalize, as its sentence-transformers folder declares; cosine, no training).
2. Grid on dev only (seed 1): ``finetune sim --architecture bi-encoder`` over objective
   {cosine, cosent} x lr x epochs; each run keeps its best dev epoch (Pearson); the point with
   the highest dev Pearson is the recipe. Test scores of grid runs are written by the driver but
   neither printed nor read here.
3. Test: the chosen recipe with ``--seeds`` (default 1-5), Pearson per seed beside the zero-shot.

Usage:
    BERTKIT_DATA=../shared/data OMP_NUM_THREADS=1 nice -n 10 python benchmarks/biosses_biencoder.py \\
        [--lrs 2e-5,5e-5,1e-4 --epochs 5,10 --objectives cosine,cosent --seeds 1,2,3,4,5] \\
        [--out benchmarks/results/blurb/biosses-biencoder-minilm] [--runs /tmp/biosses-bi]
Seeds of a point chosen over a grid and its extension:
    ... biosses_biencoder.py --chosen cosent:1e-4:8 --out DIR
Grid extension (the best point at the grid's edge):
    ... biosses_biencoder.py --objectives cosent --lrs 2e-4 --epochs 4,8 --grid-only --out DIR
Smoke:
    ... biosses_biencoder.py --lrs 5e-5 --epochs 1 --objectives cosine --seeds 1 --out /tmp/bb
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model  # noqa: E402
from bertkit.tasks.sim.config import SimConfig  # noqa: E402
from bertkit.tasks.sim.task import evaluate_sim, finetune_sim  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "blurb" / "biosses-biencoder-minilm"
FIXED = {"batch_size": 16, "warmup": 0.1, "weight_decay": 0.01, "max_length": 128,
         "device": "cpu", "precision": "fp32"}


def log(fh, text: str) -> None:
    print(text, flush=True)
    fh.write(text + "\n")
    fh.flush()


def run(runs: Path, name: str, seeds: str | None = None, **settings) -> dict:
    cfg = SimConfig(data="biosses", architecture="bi-encoder", output_dir=str(runs / name),
                    overwrite=True, seeds=seeds, **FIXED, **settings)
    start = time.time()
    out = finetune_sim(cfg, console=None)
    return {"results": out, "seconds": round(time.time() - start, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lrs", default="2e-5,5e-5,1e-4")
    ap.add_argument("--epochs", default="5,10")
    ap.add_argument("--objectives", default="cosine,cosent")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--runs", type=Path, default=Path("/tmp/biosses-bi"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--chosen", default=None, metavar="OBJECTIVE:LR:EPOCHS",
                    help="skip the grid: the point a grid (and its extension) chose on dev")
    ap.add_argument("--grid-only", action="store_true",
                    help="stop after the dev grid (extending a grid whose best point is at an edge)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    fh = open(args.out / "log.txt", "w", encoding="utf-8")
    log(fh, f"BIOSSES, packaged MiniLM, bi-encoder; fixed {FIXED}; torch threads {args.threads}")
    zero = {}
    for split in ("dev", "test"):
        m = evaluate_sim(default_model(), "biosses", split, device="cpu", precision="fp32",
                         zero_shot=True).metrics
        zero[split] = {k: m[k] for k in ("pearson", "spearman", "mse", "support", "pooling")}
        log(fh, f"zero-shot {split}: Pearson {100 * m['pearson']:.2f}, Spearman "
                f"{100 * m['spearman']:.2f} ({m['pooling']} pooling)")
    grid = []
    for objective in ([] if args.chosen else args.objectives.split(",")):
        for lr in (float(x) for x in args.lrs.split(",")):
            for epochs in (int(x) for x in args.epochs.split(",")):
                name = f"grid-{objective}-lr{lr:g}-ep{epochs}"
                got = run(args.runs, name, objective=objective, lr=lr, epochs=epochs, seed=1)
                r = got["results"]
                point = {"objective": objective, "lr": lr, "epochs": epochs,
                         "dev_pearson": r["dev"]["pearson"], "best_epoch": r["best_epoch"],
                         "seconds": got["seconds"]}
                grid.append(point)
                log(fh, f"{name}: dev Pearson {100 * point['dev_pearson']:.2f} (best epoch "
                        f"{point['best_epoch']}), {got['seconds']} s")
    if args.chosen:
        objective, lr, epochs = args.chosen.split(":")
        best = {"objective": objective, "lr": float(lr), "epochs": int(epochs),
                "dev_pearson": None, "note": "given by --chosen (the earlier grids' dev choice)"}
    else:
        best = max(grid, key=lambda p: p["dev_pearson"])
    dev_best = "given" if best["dev_pearson"] is None else f"{100 * best['dev_pearson']:.2f}"
    log(fh, f"chosen on dev: objective {best['objective']}, lr {best['lr']:g}, epochs "
            f"{best['epochs']} (dev Pearson {dev_best}; zero-shot dev "
            f"{100 * zero['dev']['pearson']:.2f})")
    if args.grid_only:
        (args.out / "results.json").write_text(json.dumps(
            {"zero_shot": zero, "grid": grid, "chosen": best}, indent=2) + "\n", encoding="utf-8")
        return
    got = run(args.runs, "seeds", seeds=args.seeds, objective=best["objective"], lr=best["lr"],
              epochs=best["epochs"])
    summary = got["results"]
    per_seed = {}
    for seed, folder in summary["runs"].items():
        r = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))
        per_seed[seed] = {"test_pearson": r["test"]["pearson"],
                          "test_spearman": r["test"]["spearman"],
                          "dev_pearson": r["dev"]["pearson"], "best_epoch": r["best_epoch"],
                          "train_seconds": r["train_seconds"]}
        log(fh, f"seed {seed}: test Pearson {100 * r['test']['pearson']:.2f}, Spearman "
                f"{100 * r['test']['spearman']:.2f} (dev {100 * r['dev']['pearson']:.2f}, "
                f"best epoch {r['best_epoch']})")
    values = [100 * s["test_pearson"] for s in per_seed.values()]
    mean = statistics.mean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    below = [s for s, v in per_seed.items() if 100 * v["test_pearson"] < 100 * zero["test"]["pearson"]]
    log(fh, f"test Pearson over {len(values)} seeds: {mean:.2f} ± {std:.2f} (min {min(values):.2f}); "
            f"zero-shot {100 * zero['test']['pearson']:.2f}; seeds below it: {below or 'none'}; "
            f"{got['seconds']} s for the seeds")
    out = {"data": "biosses", "model": "packaged MiniLM (all-MiniLM-L6-v2)", "fixed": FIXED,
           "threads": args.threads, "zero_shot": zero, "grid": grid, "chosen": best,
           "seeds": per_seed, "test_pearson_mean": mean, "test_pearson_std": std,
           "seeds_below_zero_shot": below, "seeds_seconds": got["seconds"]}
    (args.out / "results.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
