"""The ``speed`` part of ``predict_stream.py`` (issue 48): ``predict ner``'s paths side by side.

One process, one thread (``torch.set_num_threads(1)``, ONNX Runtime one intra-op thread), BC5CDR
test (``--max-test N``: its first N sentences), interleaved: each repeat runs every row once, the
order rotated by one row per repeat and reversed on odd repeats. Every row loads its model before
the clock starts (stock: ``from_pretrained`` + a new ``Trainer``; bertkit: ``load_tagger``, and for
ONNX the session on the cached export); timed is prediction on the already tokenised sentences,
as process CPU time (with one thread, the work done: less sensitive than wall time to other jobs
on a shared machine) and wall time. Rows:

* ``stock b32 sorted``: the best stock row of ``ner_predict_speed.py`` (``Trainer.predict``,
  length-sorted, batch 32, argmax, first-subword alignment): the emissions alone, no CRF;
* ``bertkit b32``: ``tag_sentences`` at its defaults (length-sorted batches of 32 windows, last
  layer pruned to first pieces, CRF / constrained Viterbi);
* ``bertkit tokens``: batches of ``--batch-tokens`` padded pieces;
* ``bertkit packed``: ``--pack`` pieces a row, block-diagonal attention, ``--batch-tokens`` batches;
* ``onnxruntime fp32`` (b32) and ``onnxruntime fp32 tokens``: the ONNX Runtime backend;
* ``onnxruntime int8`` (with ``--int8``): dynamic int8 quantisation, offered only if its test F1
  is within 0.3 of fp32 (the F1 check runs on the full test set).

Checks (untimed): every fp32 bertkit row gives exactly the tags of ``bertkit b32``; entity F1
(seqeval strict) per row.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bertkit.encoders import quiet_transformers  # noqa: E402
from bertkit.metrics.ner import entity_scores  # noqa: E402
from bertkit.tasks.ner.data import load_ner_data  # noqa: E402
from bertkit.tasks.ner.encoding import encode  # noqa: E402
from bertkit.tasks.ner.model import load_tagger  # noqa: E402
from bertkit.tasks.ner.task import _set_backend, tag_sentences  # noqa: E402
from bertkit.training.devices import make_runtime  # noqa: E402

STOCK = "stock b32 sorted"
REFERENCE = "bertkit b32"


def rows(args) -> dict[str, dict]:
    """Row name -> ``tag_sentences`` keyword arguments (None: the stock row)."""
    out = {STOCK: None, REFERENCE: {},
           "bertkit tokens": {"max_tokens": args.batch_tokens},
           "bertkit packed": {"max_tokens": args.batch_tokens, "pack": args.pack},
           "onnxruntime fp32": {"backend": "onnx"},
           "onnxruntime fp32 tokens": {"backend": "onnx", "max_tokens": args.batch_tokens}}
    if args.int8:
        out["onnxruntime int8"] = {"backend": "onnx-int8", "max_tokens": args.batch_tokens}
    return out


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def run(args) -> dict:
    from ner_predict_speed import stock_predict
    from ner_vs_stock import stock_dataset
    from transformers import AutoTokenizer

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(1)
    quiet_transformers()
    import datasets

    datasets.disable_progress_bars()
    tagger, meta = load_tagger(args.model)
    model_dir = Path(meta["path"])
    labels = tagger.labels
    label2id = {lab: i for i, lab in enumerate(labels)}
    test_all = load_ner_data("bc5cdr", ("test",)).splits["test"]
    test_s = test_all[:args.max_test] if args.max_test else test_all
    gold = [s.tags for s in test_s]
    tok = AutoTokenizer.from_pretrained(model_dir)
    ds = stock_dataset(test_s, tok, label2id)
    lengths = np.asarray([len(x) for x in ds["input_ids"]])
    windows, _ = encode(test_s, tok, label2id, 512)
    runtime = make_runtime("cpu", "fp32")
    if args.repeat == 0:  # the F1 check only
        print(f"model {model_dir}; load average (1/5/15 min) "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        return {"model": str(model_dir), "int8_check": int8_check(model_dir, test_all, runtime, tok)}
    spec = rows(args)
    for kw in spec.values():  # the ONNX exports, once, untimed
        if kw and kw.get("backend", "torch") != "torch":
            _set_backend(tagger, kw["backend"])
    del tagger
    load = [os.getloadavg()]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread; model {model_dir}; "
          f"{len(test_s)} of {len(test_all)} test sentences; repeats {args.repeat}; "
          f"batch tokens {args.batch_tokens}, pack {args.pack}; load average (1/5/15 min) "
          f"{' '.join(f'{x:.2f}' for x in load[0])}", flush=True)
    names = list(spec)
    cpu: dict[str, list[float]] = {n: [] for n in names}
    wall: dict[str, list[float]] = {n: [] for n in names}
    preds: dict[str, list] = {}
    tmp = tempfile.mkdtemp(prefix="bertkit-predict-speed-")
    for r in range(args.repeat):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in (order[::-1] if r % 2 else order):
            if spec[name] is None:
                tags, w, c = stock_predict(model_dir, ds, lengths, labels, 32, True, tmp)
            else:
                tagger, _ = load_tagger(model_dir)
                if spec[name].get("backend"):
                    _set_backend(tagger, spec[name]["backend"])
                w0, c0 = time.perf_counter(), time.process_time()
                tags = tag_sentences(tagger, tok, test_s, runtime, 512, windows=windows,
                                     **spec[name])
                w, c = time.perf_counter() - w0, time.process_time() - c0
            if name in preds and preds[name] != tags:
                raise SystemExit(f"{name}: predictions differ between repeats")
            preds[name] = tags
            cpu[name].append(c)
            wall[name].append(w)
            print(f"repeat {r + 1} {name:24s} CPU {c:7.2f} s  wall {w:7.2f} s  "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    load.append(os.getloadavg())
    n = len(test_s)
    scores = {k: entity_scores(gold, v) for k, v in preds.items()}
    same = {k: preds[k] == preds[REFERENCE] for k in names if k != STOCK}
    diff_words = {k: sum(a != b for p, q in zip(preds[k], preds[REFERENCE]) for a, b in zip(p, q))
                  for k in same}
    med = {k: statistics.median(v) for k, v in cpu.items()}
    ratio = {k: [s / b for s, b in zip(cpu[STOCK], cpu[k])] for k in names}
    print(f"\n{'row':24s} {'CPU s median (min-max)':24s} {'sent/CPU s':>10s} "
          f"{'x stock (min-max)':>20s}  {'wall s median (min-max)':24s} F1   same tags as b32")
    for k in names:
        print(f"{k:24s} {spread(cpu[k]):24s} {n / med[k]:10.1f} "
              f"{statistics.median(ratio[k]):8.2f} ({min(ratio[k]):.2f}-{max(ratio[k]):.2f})"
              f"  {spread(wall[k]):24s} {100 * scores[k]['f1']:.2f} "
              f"{'-' if k == STOCK else same[k]}{'' if k == STOCK else f' ({diff_words[k]} words differ)'}")
    print(f"load average (1/5/15 min) before {' '.join(f'{x:.2f}' for x in load[0])}, after "
          f"{' '.join(f'{x:.2f}' for x in load[1])}: "
          f"{'SHARED machine (other jobs ran; compare ratios, not seconds)' if max(load[0][0], load[1][0]) > 1.5 else 'not shared'}")
    result = {"model": str(model_dir), "test_sentences": n, "repeat": args.repeat,
              "batch_tokens": args.batch_tokens, "pack": args.pack, "cpu_seconds": cpu,
              "wall_seconds": wall, "median_cpu": med,
              "sentences_per_cpu_s": {k: n / v for k, v in med.items()},
              "ratio_vs_stock": {k: {"median": statistics.median(v), "min": min(v), "max": max(v)}
                                 for k, v in ratio.items()},
              "f1_strict": {k: v["f1"] for k, v in scores.items()},
              "same_tags_as_bertkit_b32": same, "words_differing": diff_words,
              "load_before": load[0], "load_after": load[1]}
    if args.int8_f1:
        result["int8_check"] = int8_check(model_dir, test_all, runtime, tok)
    return result


def int8_check(model_dir: Path, test_all, runtime, tok) -> dict:
    """Entity F1 (seqeval strict) on the full BC5CDR test set: PyTorch (batches of 32 and packed
    rows of 128 pieces), ONNX Runtime fp32 and int8 (untimed), and how many words' tags differ
    from PyTorch's batches of 32."""
    gold = [s.tags for s in test_all]
    out, tags = {}, {}
    variants = {"torch": {}, "torch packed": {"pack": 128, "max_tokens": 4096},
                "onnx": {"backend": "onnx"}, "onnx-int8": {"backend": "onnx-int8"}}
    for name, kw in variants.items():
        tagger, _ = load_tagger(model_dir)
        tags[name] = tag_sentences(tagger, tok, test_all, runtime, 512, **kw)
        out[name] = 100 * entity_scores(gold, tags[name])["f1"]
    for name in list(variants)[1:]:
        out[f"{name} words differing from torch"] = sum(
            a != b for p, q in zip(tags[name], tags["torch"]) for a, b in zip(p, q))
    out["difference"] = out["onnx"] - out["onnx-int8"]
    out["offer_int8"] = abs(out["difference"]) <= 0.3
    print(f"full test ({len(test_all)} sentences) F1 strict: torch {out['torch']:.2f}, packed "
          f"{out['torch packed']:.2f} ({out['torch packed words differing from torch']} words "
          f"differ), onnx fp32 "
          f"{out['onnx']:.2f} ({out['onnx words differing from torch']} words differ from "
          f"torch), int8 {out['onnx-int8']:.2f} ({out['onnx-int8 words differing from torch']} "
          f"words differ; F1 difference {out['difference']:.2f}; within 0.3: "
          f"{out['offer_int8']})", flush=True)
    return out
