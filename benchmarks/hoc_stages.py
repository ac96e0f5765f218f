"""Stage records for the HoC claim: the three 10-epoch MiniLM runs of issue 42, made with
``bertkit finetune cls`` outside bench, written as the stages of the suite
``benchmarks/suites/hoc-10-epochs-minilm.yaml`` so that ``bertkit bench report`` builds the one
report the README's HoC number comes from (issue 66: the new-sets-minilm report showed HoC's
5-epoch grid stage, 41.93 from one seed, beside the README's 73.15 +- 1.75 from these runs).

Nothing is trained: each record is the run's ``results.json`` (test and dev scores, best epoch)
with the suite task's settings; the runs kept only results.json and their log, so the report
has no per-item statistics for them (no bootstrap: one encoder, nothing to compare)::

    python benchmarks/hoc_stages.py
    bertkit bench report benchmarks/results/blurb/hoc-10-epochs-minilm
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = HERE / "results" / "blurb" / "new-sets-minilm" / "hoc-10-epochs"
OUT = HERE / "results" / "blurb" / "hoc-10-epochs-minilm"
SUITE = HERE / "suites" / "hoc-10-epochs-minilm.yaml"


def stage(suite, task, encoder, seed: int, results: dict) -> dict:
    """The stage record ``bench run`` would have written for this run (``runner.run_one``)."""
    from bertkit.bench.floors import collapse_warning
    from bertkit.bench.declarations import suite_metric
    from bertkit.bench.suite import task_settings

    spec = suite_metric(task.task, task.metric)
    scale = spec.scale
    test, dev = results["test"], results["dev"]
    return {"stage": f"{encoder.name}/{task.name}/seed-{seed}", "kind": "seed",
            "encoder": encoder.name, "model": encoder.model, "fingerprint": encoder.fingerprint,
            "task": task.name, "task_kind": task.task, "data": task.data,
            "metric": task.metric, "seed": seed, "overrides": {},
            "score": float(test[spec.key]) * scale,
            "dev_score": float(dev[results["select_metric"]]) * scale,
            "test": {k: v for k, v in test.items() if isinstance(v, (int, float))},
            "settings": {**task_settings(suite, task, "full"), "data": task.data, "seed": seed},
            "run": f"runs/{encoder.name}/{task.name}/seed-{seed}",
            "command": f"bertkit finetune cls --data hoc --lr 2e-4 --epochs 10 --batch-size 16 "
                       f"--max-length 256 --seed {seed}",
            "seconds": round(float(results["train_seconds"]) + float(results["predict_seconds"]),
                             1),
            "budget": "full", "precision": "fp32", "device": "cpu",
            "collapse": collapse_warning(test), "best_epoch": results.get("best_epoch"),
            "converted_from": f"benchmarks/results/blurb/new-sets-minilm/hoc-10-epochs/"
                              f"seed-{seed}.results.json"}


def main(argv: list[str] | None = None) -> Path:
    """Write ``OUT/bench.json`` and ``OUT/stages/minilm/hoc/seed-N.json``; returns OUT."""
    from bertkit.bench.encoders import Encoder
    from bertkit.bench.manifest import manifest
    from bertkit.bench.suite import load_suite
    from bertkit.io import write_json

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the results folder to write")
    args = parser.parse_args(argv)
    suite = load_suite(SUITE)
    task = suite.task("hoc")
    # the packaged MiniLM as the new-sets-minilm run recorded it (its fingerprint)
    was = json.loads((RUNS.parent / "bench.json").read_text(encoding="utf-8"))["encoders"]
    encoder = Encoder(**{**was["minilm"], "corpora": tuple(was["minilm"]["corpora"])})
    record = manifest(suite, [encoder], "full", "fixed")
    record["suite"]["path"] = str(SUITE.relative_to(HERE.parent))
    write_json(args.out / "bench.json", record)
    for seed in suite.seeds:
        results = json.loads((RUNS / f"seed-{seed}.results.json").read_text(encoding="utf-8"))
        write_json(args.out / "stages" / encoder.name / task.name / f"seed-{seed}.json",
                   stage(suite, task, encoder, seed, results))
    return args.out


if __name__ == "__main__":
    print(main())
