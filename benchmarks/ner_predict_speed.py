"""Prediction speed on the BC5CDR test set: bertkit vs the best stock Hugging Face setting, interleaved.

Both sides predict with one fine-tuned checkpoint saved by bertkit (``--model``: the run directory
of ``bertkit finetune ner --no-crf``, see below), so their predictions can be checked against each
other. Every measurement rebuilds its model from disk: the stock side with
``AutoModelForTokenClassification.from_pretrained`` and a new ``Trainer``, bertkit with
``load_tagger``. Rows:

* ``stock b8``: ``Trainer.predict`` on the tokenised test set (as ``ner_vs_stock.py`` builds it)
  at the Trainer's default eval batch of 8, then argmax and first-subword alignment;
* ``stock b32``, ``stock b64``: the same at ``per_device_eval_batch_size`` 32 and 64;
* ``stock b32 sorted``, ``stock b64 sorted``: the tokenised set sorted by length (longest first,
  ``Dataset.select``) before ``Trainer.predict``, the predictions put back in file order before
  scoring (sorting and un-sorting are timed);
* ``bertkit``: ``tag_sentences`` at its defaults (length-sorted batches of 32 windows, the last
  layer computed at first pieces only, constrained Viterbi; two batches at once only with 2+
  threads, so one at a time at the default ``--threads 1``).

Each repeat runs every row once; the order is rotated by one row per repeat (and reversed on odd
repeats) so bertkit's place among the stock rows changes. Timed: the model's forward passes and
decoding on the already tokenised test set, as process CPU time (``time.process_time``: with one
thread it is the work done, much less sensitive than wall-clock time to other jobs on a shared
machine) and wall-clock time; tokenising is timed once per side and printed beside. The headline
is, per repeat, the CPU time of the stock row with the lowest median over that of bertkit in the
same repeat: its median with min and max over repeats (the same in wall-clock time beside). The 1-minute load average
is printed before and after; above ``threads + 0.5`` the run is marked SHARED (other jobs ran).

Check (untimed): entity F1 of every row (strict IOB2 and seqeval's default mode); all stock rows
must give identical predictions, and the argmax of bertkit's scores for the same checkpoint (its
pruned last layer) must equal the stock predictions; bertkit's own figure uses constrained
Viterbi, so its F1 can differ slightly from the stock argmax F1.

Usage:
    BERTKIT_DATA=../shared/data OMP_NUM_THREADS=1 bertkit finetune ner --no-crf --epochs 1 \\
        --lr 2e-4 --batch-size 32 --warmup 0.1 --max-train-samples 2000 --max-eval-samples 300 \\
        --seed 42 -o runs/ner-predict-bench
    BERTKIT_DATA=../shared/data python benchmarks/ner_predict_speed.py --model runs/ner-predict-bench \\
        [--repeat 3] [--threads 1] [--max-test N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import quiet_transformers  # noqa: E402
from bertkit.errors import BertkitError  # noqa: E402
from bertkit.metrics.ner import entity_scores  # noqa: E402
from bertkit.tasks.ner.data import load_ner_data  # noqa: E402
from bertkit.tasks.ner.encoding import collate, encode  # noqa: E402
from bertkit.tasks.ner.model import load_tagger  # noqa: E402
from bertkit.tasks.ner.task import tag_sentences  # noqa: E402
from bertkit.training.devices import make_runtime  # noqa: E402
from ner_vs_stock import stock_dataset  # noqa: E402  (same folder: the stock recipe's tokenisation)

STOCK_ROWS = (("stock b8", 8, False), ("stock b32", 32, False), ("stock b64", 64, False),
              ("stock b32 sorted", 32, True), ("stock b64 sorted", 64, True))


def stock_predict(model_dir: Path, ds, lengths: np.ndarray, labels: list[str], batch: int,
                  sort: bool, out: str) -> tuple[list[list[str]], float, float]:
    """One stock measurement: load the checkpoint, build a ``Trainer``, predict (timed).

    Returns the per-sentence tags in file order, and the wall-clock and process CPU seconds of
    the timed part (``Trainer.predict``, argmax, first-subword alignment, and with ``sort`` the
    sort and un-sort).
    """
    from transformers import (AutoModelForTokenClassification, AutoTokenizer,
                              DataCollatorForTokenClassification, Trainer, TrainingArguments)

    model = AutoModelForTokenClassification.from_pretrained(model_dir).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    trainer = Trainer(model=model, args=TrainingArguments(
        output_dir=out, report_to=[], disable_tqdm=True, use_cpu=True,
        per_device_eval_batch_size=batch),
        data_collator=DataCollatorForTokenClassification(tok))
    start, cpu = time.perf_counter(), time.process_time()
    order = np.argsort(-lengths, kind="stable") if sort else np.arange(len(lengths))
    pred = trainer.predict(ds.select(order) if sort else ds)
    ids = np.argmax(pred.predictions, axis=2)
    tags: list = [None] * len(order)
    for j, i in enumerate(order):
        tags[i] = [labels[p] for p, g in zip(ids[j], pred.label_ids[j]) if g != -100]
    return tags, time.perf_counter() - start, time.process_time() - cpu


def bertkit_predict(model_dir: Path, sentences, windows, runtime
                    ) -> tuple[list[list[str]], float, float]:
    """One bertkit measurement: ``load_tagger``, then ``tag_sentences`` at its defaults (timed:
    wall-clock and process CPU seconds)."""
    from transformers import AutoTokenizer

    tagger, _ = load_tagger(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    start, cpu = time.perf_counter(), time.process_time()
    tags = tag_sentences(tagger, tok, sentences, runtime, 512, windows=windows)
    return tags, time.perf_counter() - start, time.process_time() - cpu


def bertkit_argmax(model_dir: Path, sentences, windows) -> list[list[str]]:
    """Untimed check: the argmax of bertkit's first-piece scores (pruned last layer) per word."""
    from transformers import AutoTokenizer

    tagger, _ = load_tagger(model_dir)
    pad = AutoTokenizer.from_pretrained(model_dir).pad_token_id
    out = [np.zeros(len(s.tokens), dtype=np.int64) for s in sentences]
    with torch.inference_mode():
        for b in range(0, len(windows), 32):
            chunk = windows[b:b + 32]
            batch = collate(chunk, pad)
            pred = tagger.emissions(batch["input_ids"], batch["attention_mask"],
                                    batch["word_pos"]).argmax(-1).numpy()
            for row, w in enumerate(chunk):
                out[w.sentence][w.word_index] = pred[row, :len(w.word_index)]
    return [[tagger.labels[p] for p in o] for o in out]


def spread(values: list[float]) -> str:
    """``median (min-max)`` to one decimal."""
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, required=True,
                    help="run (or model) directory of `bertkit finetune ner --no-crf`")
    ap.add_argument("--data", default="bc5cdr")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (both sides)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="use only the first N test sentences (a fixed subset)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.repeat < 1 or args.threads < 1:
        raise SystemExit("--repeat and --threads must be at least 1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(args.threads)
    quiet_transformers()
    import datasets
    from transformers import AutoTokenizer

    datasets.disable_progress_bars()
    try:
        tagger, meta = load_tagger(args.model)
    except BertkitError as exc:
        raise SystemExit(str(exc)) from None
    if tagger.crf is not None:
        raise SystemExit(f"{args.model}: a CRF model; the stock side cannot use its transitions "
                         "(expected a run of `bertkit finetune ner --no-crf`)")
    model_dir = Path(meta["path"])
    labels = tagger.labels
    label2id = {lab: i for i, lab in enumerate(labels)}
    del tagger
    test_s = load_ner_data(args.data, ("test",)).splits["test"]
    n_all = len(test_s)
    if args.max_test:
        test_s = test_s[:args.max_test]
    gold = [s.tags for s in test_s]
    tok = AutoTokenizer.from_pretrained(model_dir)
    start = time.perf_counter()
    ds = stock_dataset(test_s, tok, label2id)
    t_stock_tok = time.perf_counter() - start
    start = time.perf_counter()
    windows, _ = encode(test_s, tok, label2id, 512)
    t_bertkit_enc = time.perf_counter() - start
    lengths = np.asarray([len(x) for x in ds["input_ids"]])
    runtime = make_runtime("cpu", "fp32")
    load_before = os.getloadavg()[0]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s) of {os.cpu_count()} "
          f"cpus; model {model_dir}; {len(test_s)} of {n_all} test sentences"
          f"{' (first ' + str(args.max_test) + ')' if args.max_test else ''}; repeats "
          f"{args.repeat}; load average before {load_before:.2f}", flush=True)

    rows = [name for name, _, _ in STOCK_ROWS] + ["bertkit"]
    spec = {name: (b, s) for name, b, s in STOCK_ROWS}
    times: dict[str, list[float]] = {r: [] for r in rows}  # process CPU seconds
    walls: dict[str, list[float]] = {r: [] for r in rows}  # wall-clock seconds
    preds: dict[str, list] = {}
    out = tempfile.mkdtemp(prefix="bertkit-predict-bench-")
    for r in range(args.repeat):
        order = rows[r % len(rows):] + rows[:r % len(rows)]
        if r % 2:
            order = order[::-1]
        for name in order:
            if name == "bertkit":
                tags, wall, sec = bertkit_predict(model_dir, test_s, windows, runtime)
            else:
                tags, wall, sec = stock_predict(model_dir, ds, lengths, labels, *spec[name], out)
            times[name].append(sec)
            walls[name].append(wall)
            if name in preds and preds[name] != tags:
                raise SystemExit(f"{name}: predictions differ between repeats")
            preds[name] = tags
            print(f"repeat {r + 1} {name:17s} CPU {sec:7.1f} s  wall {wall:7.1f} s  "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    load_after = os.getloadavg()[0]

    check = bertkit_argmax(model_dir, test_s, windows)
    scores = {name: entity_scores(gold, preds[name]) for name in rows}
    scores["bertkit argmax (check)"] = entity_scores(gold, check)
    same_stock = all(preds[name] == preds["stock b8"] for name, _, _ in STOCK_ROWS)
    same_model = check == preds["stock b8"]
    diff_words = sum(a != b for p, q in zip(check, preds["stock b8"]) for a, b in zip(p, q))

    med = {name: statistics.median(v) for name, v in times.items()}
    best = min((name for name, _, _ in STOCK_ROWS), key=med.get)
    ratios = [s / b for s, b in zip(times[best], times["bertkit"])]
    wall_ratios = [s / b for s, b in zip(walls[best], walls["bertkit"])]
    print(f"\n{'row':17s} {'CPU s median (min-max)':24s} {'sentences/CPU s':>15s} "
          f"{'x bertkit':>9s}  {'wall s median (min-max)':24s} F1 strict / default mode")
    for name in rows:
        sc = scores[name]
        print(f"{name:17s} {spread(times[name]):24s} {len(test_s) / med[name]:15.1f} "
              f"{med[name] / med['bertkit']:9.2f}  {spread(walls[name]):24s} "
              f"{100 * sc['f1']:.2f} / {100 * sc['conlleval_f1']:.2f}")
    sc = scores["bertkit argmax (check)"]
    print(f"bertkit argmax of the same scores (untimed check): F1 {100 * sc['f1']:.2f} / "
          f"{100 * sc['conlleval_f1']:.2f}; equal to the stock predictions: {same_model} "
          f"({diff_words} words differ); all stock rows identical: {same_stock}")
    print(f"best stock row: {best}; speed of bertkit over it (its time / bertkit's): "
          f"{statistics.median(ratios):.2f}x in CPU time (median of per-repeat ratios; min {min(ratios):.2f}x, max "
          f"{max(ratios):.2f}x); wall-clock {statistics.median(wall_ratios):.2f}x "
          f"({min(wall_ratios):.2f}-{max(wall_ratios):.2f}x); against the Trainer default "
          f"(stock b8), CPU time: "
          f"{statistics.median([s / b for s, b in zip(times['stock b8'], times['bertkit'])]):.2f}x")
    print(f"tokenisation (not in the figures above): stock {t_stock_tok:.1f} s, "
          f"bertkit {t_bertkit_enc:.1f} s")
    shared = max(load_before, load_after) > args.threads + 0.5
    print(f"load average before {load_before:.2f}, after {load_after:.2f}: "
          f"{'SHARED (other jobs ran on the machine; compare ratios, not seconds)' if shared else 'not shared'}")
    if args.json:
        args.json.write_text(json.dumps({
            "model": str(model_dir), "threads": torch.get_num_threads(), "test_sentences": len(test_s),
            "test_sentences_all": n_all, "repeat": args.repeat, "cpu_seconds": times,
            "median_cpu": med, "wall_seconds": walls,
            "best_stock": best, "ratio_vs_best_stock": {"median": statistics.median(ratios),
                                                        "min": min(ratios), "max": max(ratios),
                                                        "per_repeat": ratios},
            "wall_ratio_vs_best_stock": wall_ratios,
            "f1_strict": {k: v["f1"] for k, v in scores.items()},
            "f1_default_mode": {k: v["conlleval_f1"] for k, v in scores.items()},
            "stock_rows_identical": same_stock, "bertkit_argmax_equals_stock": same_model,
            "tokenise_seconds": {"stock": t_stock_tok, "bertkit": t_bertkit_enc},
            "load_before": load_before, "load_after": load_after, "shared": shared,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
