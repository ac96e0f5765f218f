"""bertkit vs the stock Hugging Face NER recipe on BC5CDR: interleaved sides over several seeds.

What each side runs (test entity F1 by seqeval, default/conlleval mode and strict IOB2):

* ``stock``: ``examples/pytorch/token-classification/run_ner.py`` as a user runs it:
  ``set_seed`` then ``AutoModelForTokenClassification`` (so the new head is seeded),
  first-subword labels, ``DataCollatorForTokenClassification``, ``Trainer`` (random batches
  padded to their longest; lr ``--lr``, no warm-up, no weight decay, linear decay, clipping 1.0;
  the last epoch kept), then ``Trainer.predict`` (eval batch 8), argmax at first sub-words.
* ``bertkit``: ``finetune_ner`` with the same model, data, epochs, lr, batch size and seed, and
  the Trainer's defaults for the rest (no warm-up, no weight decay, clipping 1.0, AdamW
  0.9/0.999/1e-8), no CRF: random batches (``length_group=1``) on packed rows.
* ``bertkit, argmax decoding`` (no training): the ``bertkit`` side's saved ``model/`` (a plain
  ``AutoModelForTokenClassification``) scored with the stock prediction path above, so the same
  weights are scored both ways.
* ``--isolate`` (training runs, interleaved like the others): ``bertkit, no packing`` (the same
  random batches, ``pack=False, length_group=1``) and ``bertkit, batch-mean loss`` (bertkit's
  batches without ``loss_scale``: the stock loss). ``--isolate packing`` or ``loss`` runs one.
* ``--recipe``: bertkit's own default recipe (``recipes/finetune/bc5cdr-ner-minilm.yaml``, chosen
  on dev only: lr 2e-4, CRF, 3 epochs, warm-up, weight decay), not a same-settings side.

Where bertkit differs from the stock recipe at "same settings" (the table's caption):

1. Decoding: constrained Viterbi over word-level log-softmax scores (output always valid IOB2)
   vs argmax per first sub-word. Isolated by ``bertkit, argmax decoding``.
2. Loss weighting: bertkit's batch loss is the mean cross-entropy over the batch's labelled
   pieces times ``loss_scale = n_b / n_mean`` (``TokenTagger._token_loss`` in
   ``bertkit/tasks/ner/model.py``, ``WindowBatches.iter_batches`` in ``encoding.py``), i.e. the
   batch's summed loss over ``n_mean``, the labelled pieces per batch averaged over the epoch:
   every labelled word weighs the same across the epoch. The stock loss is
   ``BertForTokenClassification``'s ``CrossEntropyLoss()`` mean over the batch's labelled pieces
   (the Trainer passes ``num_items_in_batch``, which the BERT head ignores; without
   accumulation or several devices it would be the same count): every batch weighs the same, so
   a word in a batch with few labelled words weighs more, and the short last batch of an epoch
   counts as a full one. Packing does not change either loss. The two differ by one factor
   per batch, so where clipping at 1.0 acts (a batch gradient norm above 1) the clipped updates
   agree, and AdamW's normalisation leaves only the relative weight of steps. The header prints
   the spread of ``loss_scale`` over bertkit's first-epoch batches. Isolated by
   ``bertkit, batch-mean loss``.
3. Packing: training forward passes on packed rows (block-diagonal attention, restarted
   positions: the same logits as the padded batch, ``bertkit/inputs/packing.py``), a speed change.
   Isolated by ``bertkit, no packing``.
4. Model selection: bertkit scores dev after each epoch (untimed) and keeps the best epoch by
   strict entity F1; the stock recipe keeps the last. The kept epoch is printed (``best ep``);
   not isolated.
5. Data order and dropout: each side shuffles with its own generator from the seed (bertkit:
   NumPy, ``seed + epoch``; Trainer: torch ``RandomSampler``), so one seed gives different batches
   on the two sides; the seed spread covers it.
6. Prediction (speed only): bertkit runs length-sorted batches of 32 with the last layer at
   first pieces only (same scores); the stock side ``Trainer.predict`` at its default batch of
   8. ``benchmarks/ner_predict_speed.py`` is the prediction-speed benchmark.

Fairness: the sides alternate within one run (seed 1: stock, bertkit, ...; seed 2: reversed;
:func:`_interleave.side_order`), each run builds its model afresh, the 1-minute load average is
recorded before and after every run (SHARED marks a run where it exceeded ``--threads`` + 0.5),
and figures are medians with min-max over seeds; differences and ratios are per seed (bertkit -
stock within one seed), summarised the same way. Training seconds: ``Trainer.train()`` wall time
for stock, bertkit's training loop time (dev evaluation excluded); prediction seconds: model and
decoding on the tokenised test set. The printed lines go to ``benchmarks/results/ner_vs_stock/<--name>.log``.

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/ner_vs_stock.py [--seeds 1,2,3 --threads 1
        --epochs 2 --lr 5e-5 --batch-size 32] [--isolate [packing,loss]] [--recipe]
        [--max-train N --max-test N] [--no-stock] [--name ner_vs_stock
        --log-dir benchmarks/results] [--json OUT]
    ... ner_vs_stock.py --merge A.json B.json --name NAME   (seeds run in separate processes)
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interleave import load1, logger, merge_runs, shared_note, side_order, spread  # noqa: E402
from _stock import stock_training_args  # noqa: E402
from bertkit.settings.layers import build_config  # noqa: E402
from bertkit.encoders import default_model, quiet_transformers  # noqa: E402
from bertkit.metrics.ner import entity_scores  # noqa: E402
from bertkit.workflows.recipes import load_recipe  # noqa: E402
from bertkit.tasks.ner import NERConfig, finetune_ner  # noqa: E402
from bertkit.tasks.ner.data import load_ner_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "ner_vs_stock"
NAMES = {"stock": "stock HF recipe", "bertkit": "bertkit",
         "bertkit-argmax": "bertkit, argmax decoding", "bertkit-no-pack": "bertkit, no packing",
         "bertkit-batch-mean": "bertkit, batch-mean loss", "recipe": "bertkit default recipe"}
ISOLATING = ("bertkit-argmax", "bertkit-no-pack", "bertkit-batch-mean")  # bertkit less one thing
CAPTION = ("bertkit differs from the stock recipe at same settings in: (1) constrained Viterbi "
           "decoding (row 'argmax decoding': same weights, stock prediction path); (2) loss "
           "weighting: summed over the batch's labelled words / their mean per batch, vs the "
           "stock per-batch mean (row 'batch-mean loss'); (3) packed rows (row 'no packing'); "
           "(4) best dev epoch kept, stock the last (best ep); (5) its own shuffle and dropout "
           "streams; (6) prediction batches (speed only).")


def stock_dataset(sentences, tok, label2id: dict[str, int]):
    """The stock recipe's tokenised ``datasets.Dataset``: first-subword labels, -100 elsewhere
    (a tag unseen in training is labelled ``O``), as ``run_ner.py`` builds it."""
    import datasets

    def tokenize(batch):
        enc = tok(batch["tokens"], is_split_into_words=True, truncation=True)
        all_labels = []
        for i, tags in enumerate(batch["tags"]):
            prev, row = None, []
            for w in enc.word_ids(i):
                row.append(-100 if w is None or w == prev else label2id.get(tags[w], label2id["O"]))
                prev = w
            all_labels.append(row)
        enc["labels"] = all_labels
        return enc

    ds = datasets.Dataset.from_dict({"tokens": [s.tokens for s in sentences],
                                     "tags": [s.tags for s in sentences]})
    return ds.map(tokenize, batched=True, remove_columns=["tokens", "tags"])


def trainer_args(out: str, args=None, seed: int = 42):
    """The stock ``TrainingArguments`` (``_stock.stock_training_args``): with ``args`` for
    training, without for prediction."""
    if args is None:
        return stock_training_args(out, seed)
    return stock_training_args(out, seed, args.batch_size, lr=args.lr, epochs=args.epochs)


def stock_predict(trainer, tok, test_s, labels: list[str]) -> dict:
    """The stock prediction path: ``Trainer.predict``, argmax at first sub-words, seqeval."""
    label2id = {lab: i for i, lab in enumerate(labels)}
    test_ds = stock_dataset(test_s, tok, label2id)
    start = time.perf_counter()
    out = trainer.predict(test_ds)
    pred_ids = np.argmax(out.predictions, axis=2)
    preds = []
    for i, s in enumerate(test_s):
        row = [labels[p] for p, lab in zip(pred_ids[i], out.label_ids[i]) if lab != -100]
        preds.append(row + ["O"] * (len(s.tokens) - len(row)))  # truncated words: O
    seconds = time.perf_counter() - start
    return {"test": entity_scores([s.tags for s in test_s], preds), "predict_seconds": seconds}


def stock_run(train_s, test_s, args, seed: int, out: str) -> dict:
    """The stock Trainer recipe, trained and scored."""
    from transformers import (AutoModelForTokenClassification, AutoTokenizer,
                              DataCollatorForTokenClassification, Trainer, set_seed)
    from transformers.trainer_callback import PrinterCallback

    labels = sorted({t for s in train_s for t in s.tags})
    tok = AutoTokenizer.from_pretrained(default_model())
    train_ds = stock_dataset(train_s, tok, {lab: i for i, lab in enumerate(labels)})
    set_seed(seed)  # as run_ner.py: before the model, so the new head's initialisation is seeded
    model = AutoModelForTokenClassification.from_pretrained(
        default_model(), num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={lab: i for i, lab in enumerate(labels)})
    trainer = Trainer(model=model, args=trainer_args(out, args, seed), train_dataset=train_ds,
                      data_collator=DataCollatorForTokenClassification(tok))
    trainer.remove_callback(PrinterCallback)  # its end-of-training dict, unasked for
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    return {**stock_predict(trainer, tok, test_s, labels), "train_seconds": seconds,
            "train_sentences_per_second": len(train_s) * args.epochs / seconds}


def argmax_run(model_dir: Path, test_s, out: str) -> dict:
    """bertkit's saved weights scored with the stock prediction path (no training)."""
    from transformers import (AutoModelForTokenClassification, AutoTokenizer,
                              DataCollatorForTokenClassification, Trainer)

    model = AutoModelForTokenClassification.from_pretrained(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    trainer = Trainer(model=model, args=trainer_args(out),
                      data_collator=DataCollatorForTokenClassification(tok))
    return stock_predict(trainer, tok, test_s, labels)


@contextlib.contextmanager
def batch_mean_loss():
    """bertkit's NER batches without ``loss_scale``: its loss is then the batch's mean over
    labelled pieces, the stock loss (``WindowBatches(token_weighted=False)``)."""
    import bertkit.tasks.ner.task as ner_task

    original = ner_task.WindowBatches
    ner_task.WindowBatches = functools.partial(original, token_weighted=False)
    try:
        yield
    finally:
        ner_task.WindowBatches = original


def bertkit_run(side: str, args, seed: int, out: str) -> dict:
    """bertkit at the stock settings (``side`` picks the isolating variant), or its recipe."""
    limits = {"data": args.data, "output_dir": out, "max_train_samples": args.max_train,
              "max_eval_samples": args.max_test, "logging_steps": 10**9, "seed": seed}
    if side == "recipe":
        recipe = load_recipe(ROOT / "recipes" / "finetune" / "bc5cdr-ner-minilm.yaml")
        return finetune_ner(build_config(NERConfig, recipe, limits), console=None)
    cfg = NERConfig(epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, warmup=0.0,
                    weight_decay=0.0, max_grad_norm=1.0, crf=False, length_group=1,
                    pack=side != "bertkit-no-pack", **limits)
    with batch_mean_loss() if side == "bertkit-batch-mean" else contextlib.nullcontext():
        return finetune_ner(cfg, console=None)


def loss_scale_spread(train_s, args, seed: int) -> str:
    """The spread of bertkit's ``loss_scale`` over its first-epoch batches at ``seed``."""
    from bertkit.encoders import load_tokenizer
    from bertkit.tasks.ner.encoding import WindowBatches, encode

    labels = sorted({t for s in train_s for t in s.tags})
    windows, _ = encode(train_s, load_tokenizer(default_model()),
                        {lab: i for i, lab in enumerate(labels)}, 512)
    batches = WindowBatches(windows, args.batch_size, seed, 0, length_group=1)
    return spread([float(b["loss_scale"]) for b in batches.iter_batches(0)])


def row(name: str, seed: int, r: dict, threads: int) -> str:
    t = r["test"]
    train = (f"train {r['train_seconds']:7.1f} s {r['train_sentences_per_second']:6.2f} sent/s"
             if "train_seconds" in r else f"{'(the bertkit weights)':<33}")
    best = f"  best ep {r['best_epoch']}" if r.get("best_epoch") else ""
    return (f"seed {seed} {NAMES[name]:<25} F1 {100 * t['conlleval_f1']:6.2f} (strict "
            f"{100 * t['f1']:6.2f})  {train}  predict {r['predict_seconds']:6.1f} s{best}  "
            f"{shared_note(r['load_before'], r['load_after'], threads)}")


def differences(results: dict, seeds: list[int], ref: str, log, out: dict) -> None:
    """Per seed, each side minus ``ref`` (F1 points) and side/``ref`` training throughput."""
    base = results[ref]
    log(f"\nper seed, side - {NAMES[ref]} (F1 points) and side/{NAMES[ref]} training throughput:")
    for side, runs in results.items():
        if side == ref or (ref != "stock" and side not in ISOLATING):
            continue
        d_def = [100 * (runs[s]["test"]["conlleval_f1"] - base[s]["test"]["conlleval_f1"])
                 for s in seeds]
        d_strict = [100 * (runs[s]["test"]["f1"] - base[s]["test"]["f1"]) for s in seeds]
        line = f"{NAMES[side]:<25} default mode {spread(d_def)}  strict {spread(d_strict)}"
        key = "" if ref == "stock" else f"_vs_{ref}"
        out[side].update({f"diff_default{key}": d_def, f"diff_strict{key}": d_strict})
        if "train_seconds" in runs[seeds[0]]:
            ratios = [runs[s]["train_sentences_per_second"] / base[s]["train_sentences_per_second"]
                      for s in seeds]
            line += f"  throughput x {spread(ratios)}"
            out[side][f"throughput_ratios{key}"] = ratios
        log(line)


def summarise(results: dict, seeds: list[int], log) -> dict:
    """Medians (min-max) per side; per-seed differences and ratios against stock (when run) and,
    for the rows that isolate one of bertkit's differences, against bertkit; returns them."""
    log(f"\nover seeds {seeds}: medians (min, max); F1 in points\n{CAPTION}")
    out = {}
    for side, runs in results.items():
        f1 = [100 * runs[s]["test"]["conlleval_f1"] for s in seeds]
        strict = [100 * runs[s]["test"]["f1"] for s in seeds]
        line = f"{NAMES[side]:<25} F1 {spread(f1)}  strict {spread(strict)}"
        if "train_seconds" in runs[seeds[0]]:
            line += f"  sent/s {spread([runs[s]['train_sentences_per_second'] for s in seeds])}"
        log(line)
        out[side] = {"f1": statistics.median(f1), "strict": statistics.median(strict)}
    if "stock" in results:
        differences(results, seeds, "stock", log, out)
    if "bertkit" in results and any(side in ISOLATING for side in results):
        differences(results, seeds, "bertkit", log, out)
    return out


def merge(paths: list[Path], log) -> dict:
    """Summarise several ``--json`` files of this script (e.g. seeds run side by side in two
    processes); every setting but the seeds, name, threads and JSON path must agree."""
    free = {"seeds", "name", "json", "merge", "threads", "log_dir"}
    results, seeds, saved = merge_runs(paths, free, log)
    for side, by_seed in results.items():
        for seed in seeds:
            log(row(side, seed, by_seed[seed], saved[0]["args"].get("threads") or 1))
    return summarise(results, seeds, log)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="bc5cdr")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-train", type=int, default=None, help="first N training sentences only")
    ap.add_argument("--max-test", type=int, default=None,
                    help="first N test sentences only (bertkit: also the first N dev sentences)")
    ap.add_argument("--isolate", nargs="?", const="packing,loss", default="",
                    help="add training sides isolating packing and/or the loss weighting")
    ap.add_argument("--recipe", action="store_true", help="add bertkit's default recipe")
    ap.add_argument("--no-stock", action="store_true",
                    help="leave out the stock side (e.g. --isolate alone: its rows are compared "
                         "with bertkit's)")
    ap.add_argument("--merge", type=Path, nargs="+", default=None,
                    help="summarise these --json files of earlier runs (no training)")
    ap.add_argument("--name", default="ner_vs_stock", help="log name (<log-dir>/<name>.log)")
    ap.add_argument("--log-dir", type=Path, default=RESULTS)
    ap.add_argument("--json", type=Path, default=None, help="also write all figures here")
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    quiet_transformers()
    import datasets

    datasets.disable_progress_bars()
    log = logger(args.log_dir / f"{args.name}.log")
    if args.merge:
        summary = merge(args.merge, log)
        if args.json:
            args.json.write_text(json.dumps({"args": vars(args), "summary": summary}, indent=2,
                                            default=str) + "\n")
        return

    seeds = [int(s) for s in args.seeds.split(",")]
    isolate = {"packing": "bertkit-no-pack", "loss": "bertkit-batch-mean"}
    sides = ((() if args.no_stock else ("stock",)) + ("bertkit",)
             + tuple(isolate[k] for k in args.isolate.split(",") if k)
             + (("recipe",) if args.recipe else ()))
    data = load_ner_data(args.data)
    train_s = data.splits["train"][:args.max_train]
    test_s = data.splits["test"][:args.max_test]
    log(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; torch {torch.__version__}, {threads} threads, "
        f"{os.cpu_count()} CPUs, cuda={torch.cuda.is_available()}; data {args.data}: "
        f"{len(train_s)} train / {len(test_s)} test sentences; epochs {args.epochs}, lr {args.lr}, "
        f"batch {args.batch_size}, seeds {seeds}; sides {', '.join(sides)}; load {load1()}")
    log(f"bertkit loss_scale over its first-epoch batches (seed {seeds[0]}): "
        f"{loss_scale_spread(train_s, args, seeds[0])}")
    first = sides.index("bertkit") + 1
    results: dict[str, dict[int, dict]] = {s: {} for s in sides[:first] + ("bertkit-argmax",)
                                           + sides[first:]}
    start = time.perf_counter()

    def save(summary=None) -> None:  # after every run, so a stopped process keeps what it measured
        if not args.json:
            return
        args.json.parent.mkdir(parents=True, exist_ok=True)
        slim = {side: {str(s): {**r, "test": {m: x for m, x in r["test"].items()
                                              if m != "per_type"}}
                       for s, r in runs.items()} for side, runs in results.items()}
        args.json.write_text(json.dumps({"args": vars(args), "runs": slim, "summary": summary},
                                        indent=2, default=str) + "\n")

    with tempfile.TemporaryDirectory() as tmp:
        for k, seed in enumerate(seeds):
            for side in side_order(sides, k):
                before, out = load1(), f"{tmp}/{side}-{seed}"
                r = stock_run(train_s, test_s, args, seed, out) if side == "stock" \
                    else bertkit_run(side, args, seed, out)
                r.update(load_before=before, load_after=load1())
                results[side][seed] = r
                log(row(side, seed, r, threads))
                if side == "bertkit":  # the same weights, the stock prediction path
                    before = load1()
                    r = argmax_run(Path(out) / "model", test_s, f"{tmp}/argmax-{seed}")
                    r.update(load_before=before, load_after=load1())
                    results["bertkit-argmax"][seed] = r
                    log(row("bertkit-argmax", seed, r, threads))
                save()
    summary = summarise(results, seeds, log)
    log(f"\ntotal wall time {time.perf_counter() - start:.0f} s; load {load1()}; log {log.path}")
    save(summary)


if __name__ == "__main__":
    main()
