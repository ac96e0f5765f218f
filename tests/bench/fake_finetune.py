"""A stand-in for ``python -m bertkit finetune TASK --recipe R -o D [--overwrite|--resume]`` in
the runner's tests: writes what a finished NER run writes (results.json, config.yaml and
test_predictions.conll), a score that depends on the seed and the learning rate. With
``FAKE_FINETUNE_FAIL=<seed>[:<exit code>]`` that seed's run fails (exit 1, or the code given);
with ``FAKE_FINETUNE_SLEEP=<seconds>[:<seed>]`` it (that seed's run only) sleeps first (a run to
interrupt); every call appends its arguments to ``FAKE_FINETUNE_LOG``.
Its environment.json says fp32, or bf16 for the seed ``FAKE_FINETUNE_BF16`` names (a run on an
AMX-BF16 CPU, where ``--precision auto`` is bf16); with ``FAKE_FINETUNE_COLLAPSE=<warning>`` its
test scores carry that collapse warning (``baseline.warning``, as the collapse check writes it)."""

import json
import os
import sys
import time
from pathlib import Path

import yaml

args = sys.argv[1:]
recipe = yaml.safe_load(Path(args[args.index("--recipe") + 1]).read_text())["settings"]
out = Path(args[args.index("-o") + 1])
if os.environ.get("FAKE_FINETUNE_LOG"):
    with open(os.environ["FAKE_FINETUNE_LOG"], "a") as fh:
        fh.write(json.dumps(args) + "\n")
out.mkdir(parents=True, exist_ok=True)
(out / "config.yaml").write_text(yaml.safe_dump(recipe))
pause, _, only = os.environ.get("FAKE_FINETUNE_SLEEP", "").partition(":")
if pause and only in ("", str(recipe["seed"])):
    time.sleep(float(pause))
fail, _, code = os.environ.get("FAKE_FINETUNE_FAIL", "").partition(":")
if str(recipe["seed"]) == fail:
    print("error: made to fail", file=sys.stderr)
    sys.exit(int(code or 1))
seed, lr = recipe["seed"], float(recipe.get("lr", 5e-5))
right = 6 + seed % 3 + (2 if lr == 1e-3 else 0)  # sentences of 10 tagged right
lines = []
for i in range(10):
    gold = ["B-A", "I-A", "O"]
    pred = gold if i < right else ["O", "O", "O"]
    lines += [f"w\t{g}\t{p}" for g, p in zip(gold, pred)] + [""]
(out / "test_predictions.conll").write_text("\n".join(lines))
f1 = 2 * right / (2 * right + (10 - right))
test = {"f1": f1}
if os.environ.get("FAKE_FINETUNE_COLLAPSE"):  # the task's collapse check fired
    test["baseline"] = {"warning": os.environ["FAKE_FINETUNE_COLLAPSE"], "macro_f1": 0.1}
(out / "results.json").write_text(json.dumps({
    "test": test, "dev": {"f1": f1 - 0.01}, "select_metric": "f1"}))
bf16 = str(recipe["seed"]) == os.environ.get("FAKE_FINETUNE_BF16")
(out / "environment.json").write_text(json.dumps({"device": "cpu",
                                                  "precision": "bf16" if bf16 else "fp32"}))
(out / "model").mkdir(exist_ok=True)
(out / "model" / "weights").write_text("x")
