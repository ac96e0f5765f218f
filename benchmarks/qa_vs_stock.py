"""bertkit vs the stock Hugging Face recipe for extractive QA (SQuAD 1.1/2.0, COVID-QA), in one run.

Stock recipe (``examples/pytorch/question-answering/run_qa.py`` with its defaults, reproduced
here as that script does it: ``prepare_train_features``, ``prepare_validation_features`` and
``utils_qa.postprocess_qa_predictions``): ``AutoModelForQuestionAnswering``, windows of
``--max-length`` (384) pieces with ``--doc-stride`` (128) overlap, every window padded to
``--max-length`` (``pad_to_max_length=True``), answers labelled from the first gold answer as
given (no trimming), ``Trainer`` with random batches and its defaults for the rest (no warm-up,
no weight decay, linear decay, clipping 1.0), the last epoch kept, ``Trainer.predict`` then
n-best 20 / max answer 30 post-processing (SQuAD 2.0: ``version_2_with_negative`` set when the
data has unanswerable questions, null-score-difference threshold 0.0).
bertkit: ``finetune_qa`` with the same model (the packaged MiniLM), data, epochs, batch size,
seed, precision and window settings, its own learning rate (``--lr``, chosen on dev with
``--lr-grid``; stock keeps ``run_qa.py``'s 5e-5 unless ``--stock-lr``), warm-up and weight
decay (its defaults 0.1 and 0.01); length-grouped batches padded per batch, best epoch on dev F1
(with one epoch, the last).

Other differences, beside the speed: bertkit caps questions at 64 pieces (stock: never cut) and
trims answers with surrounding whitespace (stock labels them as given); bertkit's n-best are the
top 20 start/end logits among the window's context pieces, stock's the top 20 over the whole
window, of which those outside the context are then dropped; bertkit's predict time includes
tokenising the questions, stock's (``Trainer.predict`` + post-processing) does not.

Sides that isolate the padding (the stock recipe changed in one place, as a competent Hugging
Face user may run it): ``stock-dyn`` (``--dynamic-seeds``: ``pad_to_max_length=False`` +
``DataCollatorWithPadding``, random batches padded to their longest window) and
``stock-grouped`` (``--grouped-seeds``: the same plus Trainer's ``group_by_length`` sampler).
A side that isolates the hyper-parameters: ``stock-tuned`` (``--tuned-seeds``: stock-grouped
with bertkit's ``--lr``, ``--warmup`` ratio and ``--weight-decay``, all ``run_qa.py`` flags), so
that what differs from bertkit is its implementation (and bertkit's best epoch on dev);
``stock-dyn-tuned`` (``--dyn-tuned-seeds``): the same with stock-dyn's random batches. Note that
Trainer's ``group_by_length`` (``get_length_grouped_indices``) does not shuffle the batches of a
mega-batch: each mega-batch is walked from its longest windows to its shortest, while bertkit's
length-grouped batches are shuffled after grouping (:func:`bertkit.inputs.batching.length_grouped_batches`).
``--no-bertkit`` runs stock sides alone, to add one to seeds run earlier (``--merge``).

Long contexts (COVID-QA: ~32 windows a question, ~1.4 of them hold the answer): bertkit's
``--null-window-rate R`` keeps each training window of an answerable question that does not hold
the answer with probability R per epoch (Alberti et al., 2019, BERT-joint's ``include_unknowns``;
``finetune qa --null-window-rate``). That is a recipe change, not speed: the side
``bertkit-all-windows`` (``--all-windows-seeds``) is bertkit with every window (R = 1), the
stock side's windows, and isolates it. ``--model DIR`` starts both sides from the same model,
e.g. a QA model fine-tuned on SQuAD (the two-stage route: SQuAD first, then the domain set).

Both sides are scored by the same official SQuAD scorer (:mod:`bertkit.metrics.qa`); SQuAD 2.0:
the fixed-threshold (0.0) scores and the best-threshold scores (from each side's no-answer score
differences). The sides alternate (seed 1: stock first, seed 2: bertkit first, ...: by the seed
number, so one-seed stages keep alternating) and the 1-minute load average is recorded before
and after each run. Per side: median (min-max) over seeds of F1/EM, training throughput
(questions/s; bertkit's ``train_seconds`` exclude evaluation, stock's are the wall time of
``Trainer.train()``) and prediction throughput (test questions/s). Goals are judged only over
three or more seeds.

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/qa_vs_stock.py --data squad \\
        [--max-train-samples 2000 --max-eval-samples 500 --epochs 1 --batch-size 12 \\
         --lr 2e-4 --seeds 1,2,3 --dynamic-seeds 1 --threads 1] [--json OUT] \\
        [--name LOG]   # printed lines also go to benchmarks/results/qa_vs_stock/<LOG>.log
    ... --lr-grid 5e-5,1e-4,2e-4 --seeds 1   # bertkit only, scored on dev: the lr check
    ... --seeds 2 --json S2.json; ... --merge S1.json S2.json S3.json --json ALL.json
                                             # seeds run as stages, summarised together
"""

from __future__ import annotations

import argparse
import collections
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
RESULTS = Path(__file__).resolve().parent / "results" / "qa_vs_stock"

from _interleave import (load1, logger, read_same_settings, read_split, shared_note,  # noqa: E402
                         side_order, spread)
from bertkit.data.sets import data_root  # noqa: E402
from bertkit.encoders import default_model, quiet_transformers  # noqa: E402
from bertkit.metrics.qa import squad_scores  # noqa: E402


def flat_subset(src: Path, out: Path, sizes: dict[str, int | None]) -> Path:
    """The first N questions of each ``<split>.json`` (SQuAD JSON) of ``src`` as ``datasets``
    JSON lines in ``out`` (id, title, context, question, answers{text, answer_start}), so both
    sides read the same questions."""
    out.mkdir(parents=True, exist_ok=True)
    for split, n in sizes.items():
        doc = json.loads((src / f"{split}.json").read_text(encoding="utf-8"))
        rows = []
        for a, article in enumerate(doc["data"]):
            for p in article["paragraphs"]:
                for q in p["qas"]:
                    rows.append({"id": q["id"], "title": article.get("title", f"article {a + 1}"),
                                 "context": p["context"], "question": q["question"],
                                 "answers": {"text": [x["text"] for x in q["answers"]],
                                             "answer_start": [x["answer_start"]
                                                              for x in q["answers"]]}})
        rows = rows[:n] if n else rows
        (out / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                            encoding="utf-8")
    return out


# ---- the stock recipe: run_qa.py's feature functions and utils_qa's post-processing ----------

def prepare_train_features(examples, tokenizer, max_length, doc_stride, pad=True):
    """``run_qa.py``'s ``prepare_train_features`` (right padding side); ``pad``: its
    ``pad_to_max_length`` (default True: every window padded to ``max_length``)."""
    examples["question"] = [q.lstrip() for q in examples["question"]]
    tok = tokenizer(examples["question"], examples["context"], truncation="only_second",
                    max_length=max_length, stride=doc_stride, return_overflowing_tokens=True,
                    return_offsets_mapping=True, padding="max_length" if pad else False)
    sample_mapping = tok.pop("overflow_to_sample_mapping")
    offset_mapping = tok.pop("offset_mapping")
    tok["start_positions"], tok["end_positions"] = [], []
    for i, offsets in enumerate(offset_mapping):
        input_ids = tok["input_ids"][i]
        cls_index = input_ids.index(tokenizer.cls_token_id) \
            if tokenizer.cls_token_id in input_ids else 0
        sequence_ids = tok.sequence_ids(i)
        answers = examples["answers"][sample_mapping[i]]
        if len(answers["answer_start"]) == 0:
            tok["start_positions"].append(cls_index)
            tok["end_positions"].append(cls_index)
            continue
        start_char = answers["answer_start"][0]
        end_char = start_char + len(answers["text"][0])
        token_start_index = 0
        while sequence_ids[token_start_index] != 1:
            token_start_index += 1
        token_end_index = len(input_ids) - 1
        while sequence_ids[token_end_index] != 1:
            token_end_index -= 1
        if not (offsets[token_start_index][0] <= start_char
                and offsets[token_end_index][1] >= end_char):
            tok["start_positions"].append(cls_index)
            tok["end_positions"].append(cls_index)
        else:
            while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                token_start_index += 1
            tok["start_positions"].append(token_start_index - 1)
            while offsets[token_end_index][1] >= end_char:
                token_end_index -= 1
            tok["end_positions"].append(token_end_index + 1)
    return tok


def prepare_validation_features(examples, tokenizer, max_length, doc_stride, pad=True):
    """``run_qa.py``'s ``prepare_validation_features`` (``pad`` as in
    :func:`prepare_train_features`)."""
    examples["question"] = [q.lstrip() for q in examples["question"]]
    tok = tokenizer(examples["question"], examples["context"], truncation="only_second",
                    max_length=max_length, stride=doc_stride, return_overflowing_tokens=True,
                    return_offsets_mapping=True, padding="max_length" if pad else False)
    sample_mapping = tok.pop("overflow_to_sample_mapping")
    tok["example_id"] = []
    for i in range(len(tok["input_ids"])):
        sequence_ids = tok.sequence_ids(i)
        tok["example_id"].append(examples["id"][sample_mapping[i]])
        tok["offset_mapping"][i] = [(o if sequence_ids[k] == 1 else None)
                                    for k, o in enumerate(tok["offset_mapping"][i])]
    return tok


def postprocess_qa_predictions(examples, features, predictions, version_2_with_negative=False,
                               n_best_size=20, max_answer_length=30,
                               null_score_diff_threshold=0.0):
    """``utils_qa.postprocess_qa_predictions`` (its decisions unchanged); also returns the best
    non-null text per question, for the best-threshold sweep."""
    all_start_logits, all_end_logits = predictions
    example_id_to_index = {k: i for i, k in enumerate(examples["id"])}
    features_per_example = collections.defaultdict(list)
    for i, feature in enumerate(features):
        features_per_example[example_id_to_index[feature["example_id"]]].append(i)
    all_predictions, scores_diff, best_text = {}, {}, {}
    for example_index, example in enumerate(examples):
        min_null_prediction, prelim = None, []
        for feature_index in features_per_example[example_index]:
            start_logits = all_start_logits[feature_index]
            end_logits = all_end_logits[feature_index]
            offset_mapping = features[feature_index]["offset_mapping"]
            feature_null_score = start_logits[0] + end_logits[0]
            if min_null_prediction is None or min_null_prediction["score"] > feature_null_score:
                min_null_prediction = {"offsets": (0, 0), "score": feature_null_score,
                                       "start_logit": start_logits[0],
                                       "end_logit": end_logits[0]}
            start_indexes = np.argsort(start_logits)[-1:-n_best_size - 1:-1].tolist()
            end_indexes = np.argsort(end_logits)[-1:-n_best_size - 1:-1].tolist()
            for s in start_indexes:
                for e in end_indexes:
                    if (s >= len(offset_mapping) or e >= len(offset_mapping)
                            or offset_mapping[s] is None or len(offset_mapping[s]) < 2
                            or offset_mapping[e] is None or len(offset_mapping[e]) < 2):
                        continue
                    if e < s or e - s + 1 > max_answer_length:
                        continue
                    prelim.append({"offsets": (offset_mapping[s][0], offset_mapping[e][1]),
                                   "score": start_logits[s] + end_logits[e],
                                   "start_logit": start_logits[s], "end_logit": end_logits[e]})
        if version_2_with_negative and min_null_prediction is not None:
            prelim.append(min_null_prediction)
            null_score = min_null_prediction["score"]
        preds = sorted(prelim, key=lambda x: x["score"], reverse=True)[:n_best_size]
        if version_2_with_negative and min_null_prediction is not None \
                and not any(p["offsets"] == (0, 0) for p in preds):
            preds.append(min_null_prediction)
        context = example["context"]
        for pred in preds:
            offsets = pred.pop("offsets")
            pred["text"] = context[offsets[0]:offsets[1]]
        if len(preds) == 0 or (len(preds) == 1 and preds[0]["text"] == ""):
            preds.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0,
                             "score": 0.0})
        qid = example["id"]
        if not version_2_with_negative:
            all_predictions[qid] = best_text[qid] = preds[0]["text"]
            continue
        i = 0
        while preds[i]["text"] == "":
            i += 1
        best = preds[i]
        diff = float(null_score - best["start_logit"] - best["end_logit"])
        scores_diff[qid], best_text[qid] = diff, best["text"]
        all_predictions[qid] = "" if diff > null_score_diff_threshold else best["text"]
    return all_predictions, scores_diff, best_text


def score_side(test: list[dict], preds: dict, v2: bool, diffs: dict | None = None,
               spans: dict | None = None) -> dict:
    gold = {r["id"]: [t.strip() for t in r["answers"]["text"]] for r in test}
    if not v2:
        return squad_scores(gold, preds, "1.1")
    return squad_scores(gold, preds, "2.0", na_scores=diffs, span_predictions=spans)


def stock_recipe(d: Path, args, seed: int, out: str, v2: bool, pad: bool = True,
                 grouped: bool = False, tuned: bool = False) -> dict:
    """The stock Trainer recipe; returns scores and timings. ``pad``: ``pad_to_max_length``
    (``run_qa.py``'s default True); False: windows unpadded and batches padded to their longest
    by ``DataCollatorWithPadding``, as ``run_qa.py`` does with ``--pad_to_max_length False``
    (the ``stock-dyn`` side). ``grouped`` (with ``pad`` False): also Trainer's
    ``train_sampling_strategy="group_by_length"`` (``LengthGroupedSampler``; transformers 4's
    ``--group_by_length``), the ``stock-grouped`` side. ``tuned`` (with ``grouped``): also
    bertkit's learning rate, warm-up ratio and weight decay (``run_qa.py``'s ``--learning_rate``,
    ``--warmup_steps`` as a ratio, ``--weight_decay``), the ``stock-tuned`` side: what is left
    between it and bertkit is the implementation, not the hyper-parameters."""
    import datasets
    from transformers import (AutoModelForQuestionAnswering, AutoTokenizer,
                              DataCollatorWithPadding, Trainer, TrainingArguments,
                              default_data_collator, set_seed)

    quiet_transformers()
    datasets.disable_progress_bars()
    train, test = read_split(d, "train"), read_split(d, "test")
    model_name = args.model or default_model()
    tok = AutoTokenizer.from_pretrained(model_name)
    train_raw, test_raw = datasets.Dataset.from_list(train), datasets.Dataset.from_list(test)
    train_ds = train_raw.map(lambda b: prepare_train_features(b, tok, args.max_length,
                                                              args.doc_stride, pad),
                             batched=True, remove_columns=train_raw.column_names)
    test_feats = test_raw.map(lambda b: prepare_validation_features(b, tok, args.max_length,
                                                                    args.doc_stride, pad),
                              batched=True, remove_columns=test_raw.column_names)
    set_seed(seed)
    model = AutoModelForQuestionAnswering.from_pretrained(model_name)
    targs = TrainingArguments(output_dir=out, per_device_train_batch_size=args.batch_size,
                              per_device_eval_batch_size=args.eval_batch_size,
                              learning_rate=args.lr if tuned else args.stock_lr,
                              warmup_steps=args.warmup if tuned else 0,
                              weight_decay=args.weight_decay if tuned else 0.0,
                              num_train_epochs=args.epochs,
                              seed=seed, report_to=[], save_strategy="no", eval_strategy="no",
                              logging_steps=10**6, disable_tqdm=True, bf16=args.precision == "bf16",
                              use_cpu=not torch.cuda.is_available(),
                              train_sampling_strategy="group_by_length" if grouped else "random")
    trainer = Trainer(model=model, args=targs, train_dataset=train_ds,
                      data_collator=default_data_collator if pad
                      else DataCollatorWithPadding(tok))
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    out_pred = trainer.predict(test_feats.remove_columns(["example_id", "offset_mapping"]))
    preds, diffs, spans = postprocess_qa_predictions(
        test_raw, test_feats, out_pred.predictions, version_2_with_negative=v2,
        n_best_size=args.n_best, max_answer_length=args.max_answer_length)
    predict_seconds = time.perf_counter() - start
    return {"test": score_side(test, preds, v2, diffs, spans), "train_seconds": train_seconds,
            "train_windows": len(train_ds),
            "train_questions_per_second": len(train) * args.epochs / train_seconds,
            "predict_seconds": predict_seconds,
            "predict_questions_per_second": len(test) / predict_seconds}


def bertkit_run(d: Path, args, seed: int, out: str, lr: float | None = None,
                length_group: int = 50, null_window_rate: float | None = None) -> dict:
    """``finetune_qa`` on ``d`` (its test split scored; its dev split picks the best epoch);
    ``length_group`` 1: random batches (the ``bertkit-random`` side); ``null_window_rate``
    (None: ``--null-window-rate``) 1: every window (the ``bertkit-all-windows`` side)."""
    from bertkit.tasks.qa import QAConfig, finetune_qa

    rate = args.null_window_rate if null_window_rate is None else null_window_rate
    cfg = QAConfig(data=str(d), model=args.model, epochs=args.epochs,
                   batch_size=args.batch_size, seed=seed, null_window_rate=rate,
                   output_dir=out, max_length=args.max_length, doc_stride=args.doc_stride,
                   n_best=args.n_best, max_answer_length=args.max_answer_length,
                   lr=lr or args.lr, warmup=args.warmup, weight_decay=args.weight_decay,
                   logging_steps=10**9, eval_batch_size=args.eval_batch_size,
                   precision=args.precision, length_group=length_group)
    r = finetune_qa(cfg, console=None)
    n = len(read_split(d, "train"))
    r["train_questions_per_second"] = n * args.epochs / r["train_seconds"]
    r["train_windows"] = r["windows"]["train"]
    r["trained_windows_per_epoch"] = r["windows"].get("sampled_per_epoch")
    r["predict_questions_per_second"] = len(read_split(d, "test")) / r["predict_seconds"]
    return r


# the sides that isolate one difference: (side, its --X-seeds option's dest, what it changes);
# each gets its option (main) and its line in the report, and merges freely (MERGE_FREE)
ISOLATING = (("stock-dyn", "dynamic_seeds",
              "dynamic padding alone: pad_to_max_length False + DataCollatorWithPadding"),
             ("stock-grouped", "grouped_seeds",
              "dynamic padding + length-grouped batches: stock-dyn + Trainer's group_by_length"),
             ("stock-tuned", "tuned_seeds", "stock-grouped + bertkit's lr, warm-up, weight decay"),
             ("stock-dyn-tuned", "dyn_tuned_seeds",
              "stock-dyn + bertkit's lr, warm-up, weight decay"),
             ("bertkit-random", "random_seeds", "bertkit with random batches (--length-group 1)"),
             ("bertkit-all-windows", "all_windows_seeds",
              "bertkit with every training window (--null-window-rate 1), as the stock side"))


def seed_set(text: str, seeds: list[int], option: str) -> set[int]:
    """The seeds of ``--X-seeds``: ``all``, ``""`` (none) or comma-separated ints.

    Raises:
        SystemExit: anything else, with a message naming the option."""
    if text == "all":
        return set(seeds)
    try:
        return {int(x) for x in text.split(",") if x}
    except ValueError:
        raise SystemExit(f"error: {option} {text!r}: expected 'all' or seeds such as 1,2") from None


def run_side(side: str, d: Path, args, seed: int, out: str, v2: bool) -> dict:
    if side.startswith("bertkit"):
        return bertkit_run(d, args, seed, out, length_group=1 if side == "bertkit-random" else 50,
                           null_window_rate=1.0 if side == "bertkit-all-windows" else None)
    return stock_recipe(d, args, seed, out, v2, pad=side == "stock",
                        grouped=side in ("stock-grouped", "stock-tuned"),
                        tuned=side in ("stock-tuned", "stock-dyn-tuned"))


def row(name: str, seed: int, r: dict, threads: int) -> str:
    t = r["test"]
    best = f"  best-threshold F1 {t['best_f1']:6.2f} EM {t['best_exact']:6.2f}" \
        if "best_f1" in t else ""
    pq = r.get("predict_questions_per_second")
    return (f"seed {seed} {name:<9} F1 {t['f1']:6.2f}  EM {t['exact']:6.2f}{best}  train "
            f"{r['train_seconds']:7.1f} s {r['train_questions_per_second']:6.2f} questions/s "
            f"({r['train_windows']} windows"
            + (f", trained {'/'.join(map(str, r['trained_windows_per_epoch']))} by epoch"
               if r.get("trained_windows_per_epoch") and r["trained_windows_per_epoch"][0]
               != r["train_windows"] else "")
            + f")  predict {r['predict_seconds']:6.1f} s"
            + (f" {pq:6.2f} questions/s" if pq else "") + "  "
            + shared_note(r["load_before"], r["load_after"], threads))


FLOOR_EM = 5.0  # median exact match (points) under which both sides count as untrained


def report(results: dict, seeds: list[int], log, split: str = "test") -> tuple[float, float]:
    """Print each side's medians (over the seeds it ran), the F1 difference and the throughput
    ratio of bertkit against the stock recipe (over the seeds both ran), and the same against
    ``stock-dyn``/``stock-grouped`` on the seeds they ran; return the first two."""
    log(f"\n{split} scores over seeds (official SQuAD scorer, points; throughput in "
        f"questions/s; median (min, max)):")
    med = {}
    for side, runs in results.items():
        mine = [s for s in seeds if s in runs]
        if not mine:
            continue
        f1 = [runs[s]["test"]["f1"] for s in mine]
        em = [runs[s]["test"]["exact"] for s in mine]
        tp = [runs[s]["train_questions_per_second"] for s in mine]
        pq = [runs[s]["predict_questions_per_second"] for s in mine
              if "predict_questions_per_second" in runs[s]]
        med[side] = (statistics.median(f1), statistics.median(tp),
                     statistics.median(pq) if pq else None)
        log(f"{side:<9} seeds {','.join(map(str, mine))}: F1 {spread(f1)}  EM {spread(em)}  "
            f"train {spread(tp)}" + (f"  predict {spread(pq)}" if pq else ""))
        if "best_f1" in runs[mine[0]]["test"]:
            bf = [runs[s]["test"]["best_f1"] for s in mine]
            log(f"{side:<9} best-threshold F1 {spread(bf)} (fixed threshold 0.0 above)")
    if "bertkit" not in med:
        return float("nan"), float("nan")
    for iso, _, what in ISOLATING:
        dyn = [s for s in seeds if s in results.get(iso, {}) and s in results["bertkit"]]
        if not dyn:
            continue
        ref = [x for x in ("stock", iso, "bertkit")
               if x in results and all(s in results[x] for s in dyn)]

        def on(side: str, key: str, metric: bool = False) -> float:
            return statistics.median(results[side][s]["test"][key] if metric
                                     else results[side][s][key] for s in dyn)

        pq = "predict_questions_per_second"
        f1 = {side: on(side, "f1", metric=True) for side in ref}

        def speed(a: str, b: str, key: str = "train_questions_per_second",
                  what: str = "training") -> str:
            """``a``/``b`` throughput, or why it is not compared (other thread counts)."""
            threads = {results[x][s].get("threads") for x in (a, b) for s in dyn}
            if len(threads) > 1:
                return f"{what} throughput not compared (threads differ: {sorted(threads)})"
            return f"{what} throughput {on(a, key) / on(b, key):.2f}x"

        log(f"on seed(s) {','.join(map(str, dyn))}: "
            + (f"{iso}/stock ({what}): {speed(iso, 'stock')}, F1 "
               f"{f1[iso] - f1['stock']:+.2f} points; " if "stock" in ref else f"({what}) ")
            + f"bertkit/{iso}: {speed('bertkit', iso)}, F1 "
            f"{f1['bertkit'] - f1[iso]:+.2f} points"
            + (f", {speed('bertkit', iso, pq, 'prediction')}"
               if all(pq in results[x][s] for x in ("bertkit", iso) for s in dyn) else ""))
    if "stock" not in med:
        return float("nan"), float("nan")
    both = [s for s in seeds if s in results["stock"] and s in results["bertkit"]]
    gain = med["bertkit"][0] - med["stock"][0]
    ratio = med["bertkit"][1] / med["stock"][1]

    def verdict(ok: bool) -> str:  # the goals are three-seed claims
        return "not assessed: fewer than 3 seeds" if len(both) < 3 else ("met" if ok else "MISSED")

    if med["bertkit"][2] and med["stock"][2]:
        log(f"bertkit/stock prediction throughput: {med['bertkit'][2] / med['stock'][2]:.2f}x "
            f"(stock: Trainer.predict + utils_qa post-processing over a plain "
            f"AutoModelForQuestionAnswering; bertkit: encoding included)")
    f1s = {x: [results[x][s]["test"]["f1"] for s in both] for x in ("stock", "bertkit")}
    overlap = bool(both) and (min(f1s["bertkit"]) <= max(f1s["stock"])
                              and min(f1s["stock"]) <= max(f1s["bertkit"]))
    spread_note = "; the seed ranges overlap: no F1 difference shown" if overlap else ""
    em = {x: statistics.median(results[x][s]["test"]["exact"] for s in both)
          for x in ("stock", "bertkit")} if both else {}
    if em and max(em.values()) < FLOOR_EM:
        spread_note += (f"; both sides at the floor (median EM under {FLOOR_EM}): F1 shows "
                        f"little at this budget")
    log(f"bertkit/stock, ratio of the medians: F1 {gain:+.2f} points (goal >= 0: "
        f"{verdict(gain >= 0)}{spread_note}), training throughput {ratio:.2f}x (goal >= 1.5x: "
        f"{verdict(ratio >= 1.5)})")
    sampled = subsampling_note(results, both)
    if sampled:
        log(sampled)
    return gain, ratio


def windows_per_second(r: dict, epochs: int) -> float:
    """Training windows a second: those trained (bertkit: the windows sampled for each epoch;
    stock: every window, ``epochs`` times) over the training time."""
    n = sum(r.get("trained_windows_per_epoch") or []) or r["train_windows"] * epochs
    return n / r["train_seconds"]


def subsampling_note(results: dict, seeds: list[int]) -> str:
    """When bertkit trained on fewer windows than it has (``--null-window-rate`` < 1), the
    throughput ratio in questions/s is the recipe's, not the implementation's: this line says so
    and gives both sides' windows/s (and bertkit-all-windows/stock, the implementation alone,
    where that side ran); "" otherwise."""
    bk = [results["bertkit"][s] for s in seeds]
    sampled = [r.get("trained_windows_per_epoch") or [] for r in bk]
    if not bk or not all(sampled):
        return ""
    epochs = len(sampled[0])
    trained = sum(map(sum, sampled))
    every = sum(r["train_windows"] for r in bk) * epochs
    if trained >= every:
        return ""
    wps = {side: statistics.median(windows_per_second(results[side][s], epochs) for s in seeds
                                   if s in results[side])
           for side in ("stock", "bertkit", "bertkit-all-windows")
           if any(s in results.get(side, {}) for s in seeds)}
    line = (f"note: bertkit trained {trained / every:.0%} of its windows (--null-window-rate: a "
            f"recipe change, chosen on dev), so the throughput ratio above is the recipe's; "
            f"windows/s: bertkit {wps['bertkit']:.2f}, stock {wps['stock']:.2f} "
            f"({wps['bertkit'] / wps['stock']:.2f}x)")
    if "bertkit-all-windows" in wps:
        line += (f"; the implementation alone, bertkit-all-windows/stock: "
                 f"{wps['bertkit-all-windows'] / wps['stock']:.2f}x windows/s")
    return line


def lr_check(d: Path, args, seed: int, tmp: str, log) -> tuple[float, dict]:
    """bertkit at each learning rate of ``--lr-grid``, scored on dev (the data's test split is
    dev here); returns the learning rate with the best dev F1 and each rate's run."""
    scores = {}
    for lr in args.lr_grid:
        before = load1()
        r = bertkit_run(d, args, seed, f"{tmp}/lr-{lr}", lr=lr)
        r.update(load_before=before, load_after=load1())
        scores[lr] = r
        log(row(f"lr {lr:g}", seed, r, torch.get_num_threads()))
    best = max(scores, key=lambda lr: scores[lr]["test"]["f1"])
    log(f"dev F1 by learning rate: " + ", ".join(f"{lr:g}: {r['test']['f1']:.2f}"
                                                 for lr, r in scores.items())
        + f"; chosen {best:g}")
    return best, scores


# what may differ between --json files merged into one summary (the seeds split over runs)
MERGE_FREE = {"seeds", "json", "name", "merge", "log_dir", "no_bertkit", "threads"} \
    | {dest for _, dest, _ in ISOLATING}
# options added after some stages were written: their values in those stages
MERGE_DEFAULTS = {"null_window_rate": 1.0, "model": None}


def read_stages(paths: list[Path]) -> list[dict]:
    """The ``--json`` files of stages to merge, checked (:func:`merge`) before anything is logged.

    Raises:
        SystemExit: a missing, unreadable or foreign file, an ``--lr-grid`` file, other settings.
    """
    saved = read_same_settings(paths, MERGE_FREE, MERGE_DEFAULTS)
    for path, run in zip(paths, saved):
        if not isinstance(run.get("runs"), dict):
            raise SystemExit(f"error: {path} holds no seeds' runs (an --lr-grid file?): expected "
                             f"the --json file of a run with --seeds")
    return saved


def merge(paths: list[Path], log) -> tuple[dict, list[int], dict]:
    """``results[side][seed]`` of several ``--json`` files (seeds run as separate stages); every
    setting but the seeds, file names and thread counts must agree (each run keeps its
    stage's threads: a stage of stock sides alone may have run on fewer).

    Raises:
        SystemExit: a missing file, other settings, or a seed of a side in two files.
    """
    saved = read_stages(paths)
    results: dict[str, dict[int, dict]] = {}
    log(f"merged {len(paths)} runs: " + ", ".join(str(p) for p in paths))
    for path, run in zip(paths, saved):
        for side, by_seed in run["runs"].items():
            for seed, r in by_seed.items():
                if int(seed) in results.get(side, {}):
                    raise SystemExit(f"error: seed {seed} of {side} is in two of the files")
                r.setdefault("threads", run["args"].get("threads") or 1)
                results.setdefault(side, {})[int(seed)] = r
        log(f"  {path}: seeds {run['args']['seeds']}, sides {', '.join(run['runs'])}")
    seeds = sorted({s for by_seed in results.values() for s in by_seed})
    return results, seeds, saved[0]["args"]


KEEP = ("test", "train_seconds", "train_questions_per_second", "train_windows",
        "trained_windows_per_epoch", "threads",
        "predict_seconds", "predict_questions_per_second", "load_before", "load_after")


def write_json(path: Path, args: dict, results: dict, seeds: list[int], gain: float,
               ratio: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    slim = {side: {str(s): {k: v for k, v in r.items() if k in KEEP} for s, r in runs.items()}
            for side, runs in results.items()}
    args_out = dict(args) | {"json": str(path)}
    path.write_text(json.dumps({"args": args_out, "seeds": seeds, "runs": slim,
                                "median_f1_gain": gain, "median_throughput_ratio": ratio},
                               indent=2, default=str) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--data", default="squad", help="name under $BERTKIT_DATA/qa/ or a directory "
                                                    "with train/dev/test.json (SQuAD JSON)")
    ap.add_argument("--epochs", type=int, default=1, help="training epochs, both sides")
    ap.add_argument("--lr", type=float, default=5e-5, help="bertkit's learning rate")
    ap.add_argument("--stock-lr", type=float, default=5e-5,
                    help="the stock side's learning rate (run_qa.py's default: "
                         "TrainingArguments' 5e-5)")
    ap.add_argument("--warmup", type=float, default=0.1,
                    help="bertkit's warm-up (its default 0.1; stock: none)")
    ap.add_argument("--weight-decay", type=float, default=0.01,
                    help="bertkit's weight decay (its default 0.01; stock: none)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="both sides (stock: Trainer's --bf16; bertkit: --precision), so that "
                         "bertkit's auto (bf16 on CUDA and AMX CPUs) never meets stock's fp32")
    ap.add_argument("--batch-size", type=int, default=12, help="training windows per batch, both sides (run_qa.py README: 12)")
    ap.add_argument("--eval-batch-size", type=int, default=64, help="windows per forward pass "
                    "when predicting, both sides (Trainer's eval batch, raised)")
    ap.add_argument("--max-length", type=int, default=384, help="pieces per window (run_qa.py)")
    ap.add_argument("--doc-stride", type=int, default=128, help="overlap between windows")
    ap.add_argument("--n-best", type=int, default=20, help="start/end candidates per window")
    ap.add_argument("--max-answer-length", type=int, default=30, help="most pieces in an answer")
    ap.add_argument("--seeds", default="1,2,3", help="one interleaved run of the sides per seed")
    for side, dest, what in ISOLATING:
        ap.add_argument("--" + dest.replace("_", "-"), default="",
                        help=f"seeds on which the {side} side also runs ({what}); 'all' or e.g. 1")
    ap.add_argument("--null-window-rate", type=float, default=1.0,
                    help="bertkit's probability of keeping each training window that lacks its "
                         "question's answer, per epoch (finetune qa --null-window-rate; default "
                         "1: all, as stock)")
    ap.add_argument("--model", default=None,
                    help="start both sides from this model (default: the packaged MiniLM), e.g. "
                         "an earlier QA run's model/ directory: the two-stage route")
    ap.add_argument("--no-bertkit", action="store_true",
                    help="leave out bertkit (a stage adding a stock-* side to seeds already "
                         "run; --merge joins them)")
    ap.add_argument("--no-stock", action="store_true",
                    help="leave out the stock side (e.g. a stock-grouped + bertkit pair)")
    ap.add_argument("--eval-split", choices=("test", "dev"), default="test",
                    help="the split scored (dev: for choosing settings; bertkit still picks "
                         "its epoch on dev)")
    ap.add_argument("--lr-grid", type=lambda x: [float(v) for v in x.split(",")], default=None,
                    help="run only bertkit at each of these learning rates (comma-separated) "
                         "on the first seed, scored on dev, and report the best (no stock side)")
    ap.add_argument("--max-train-samples", type=int, default=None,
                    help="first N training questions (reduced runs)")
    ap.add_argument("--max-eval-samples", type=int, default=None,
                    help="first N dev and test questions")
    ap.add_argument("--merge", type=Path, nargs="+", default=None,
                    help="summarise these --json files of earlier stages (e.g. one seed each; "
                         "no training)")
    ap.add_argument("--json", type=Path, default=None, help="also write all figures here")
    ap.add_argument("--name", default=None,
                    help="log name (<log-dir>/<name>.log; default qa_vs_stock_<data>)")
    ap.add_argument("--log-dir", type=Path, default=RESULTS,
                    help="where <name>.log is written, rewritten on every call: give another "
                         "directory for trial runs, or the repo's logs of that name are replaced")
    args = ap.parse_args()
    if not 0.0 < args.null_window_rate <= 1.0:
        sys.exit(f"error: --null-window-rate {args.null_window_rate:g}: expected a share in (0, 1]")
    if args.merge:  # refuse bad stage files before the log (perhaps a committed one) is rewritten
        read_stages(args.merge)
    log = logger(args.log_dir / f"{args.name or 'qa_vs_stock_' + Path(args.data).name}.log")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        torch.set_num_threads(args.threads)
    log(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; command: python benchmarks/qa_vs_stock.py "
        + " ".join(sys.argv[1:]))
    if args.merge:
        results, seeds, first = merge(args.merge, log)
        for side, runs in results.items():
            for seed in sorted(runs):
                log(row(side, seed, runs[seed], runs[seed]["threads"]))
        gain, ratio = report(results, seeds, log, first.get("eval_split", "test"))
        if args.json:  # the stages' settings, with the merged seeds and files
            write_json(args.json, first | {"seeds": ",".join(map(str, seeds)),
                                           "merge": [str(p) for p in args.merge]},
                       results, seeds, gain, ratio)
        return
    if args.model and (Path(args.model) / "model" / "config.json").is_file():
        args.model = str(Path(args.model) / "model")  # an earlier QA run's directory
    src = Path(args.data)
    if not src.is_dir():
        root = data_root()
        if root is None or not (root / "qa" / args.data).is_dir():
            have = sorted(x.name for x in (root / "qa").iterdir() if x.is_dir()) \
                if root is not None and (root / "qa").is_dir() else []
            sys.exit(f"error: no data set '{args.data}' (" + (f"sets here: {', '.join(have)}"
                     if have else "set BERTKIT_DATA to a folder holding qa/<set>/")
                     + "; or give a directory with train/dev/test.json)")
        src = root / "qa" / args.data
    seeds = sorted(seed_set(args.seeds, [], "--seeds"))
    if not seeds:
        sys.exit("error: --seeds: expected seeds such as 1,2,3")
    extra = {side: seed_set(getattr(args, dest), seeds, "--" + dest.replace("_", "-"))
             for side, dest, _ in ISOLATING}
    split = "dev" if args.lr_grid else args.eval_split
    log(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
        f"cuda={torch.cuda.is_available()}; data {src}; model {args.model or default_model()}; "
        f"epochs {args.epochs}, bertkit null-window rate {args.null_window_rate:g}, lr bertkit "
        f"{args.lr_grid or args.lr} (warm-up {args.warmup}, weight decay {args.weight_decay}), "
        f"stock {args.stock_lr} (run_qa.py: no warm-up, no weight decay); batch "
        f"{args.batch_size}, eval batch {args.eval_batch_size}, {args.precision} both sides, "
        f"windows {args.max_length} / "
        f"overlap {args.doc_stride}, n-best {args.n_best}, max answer {args.max_answer_length}, "
        f"seeds {seeds} ("
        + ", ".join(f"{side}: {sorted(on) or 'none'}" for side, on in extra.items()) + "); "
        f"train/dev/test first "
        f"{args.max_train_samples}/{args.max_eval_samples}/{args.max_eval_samples} questions "
        f"(None = all); scored on {split}; load {load1()}")
    results: dict[str, dict[int, dict]] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        d = flat_subset(src, Path(tmp) / "data", {"train": args.max_train_samples,
                                                  "dev": args.max_eval_samples,
                                                  "test": args.max_eval_samples})
        if split == "dev":  # settings are chosen on dev: score dev in place of test
            (d / "test.jsonl").write_text((d / "dev.jsonl").read_text(encoding="utf-8"),
                                          encoding="utf-8")
        v2 = any(not r["answers"]["text"] for s in ("train", "dev", "test")
                 for r in read_split(d, s))
        log(f"SQuAD 2.0 mode (unanswerable questions in the data): {v2}")
        if args.lr_grid:
            best, scores = lr_check(d, args, seeds[0], tmp, log)
            if args.json:  # the dev choice's figures, for the record
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps(
                    {"args": vars(args), "chosen_lr": best, "lr_grid_dev": {
                        f"{lr:g}": {k: v for k, v in r.items() if k in KEEP}
                        for lr, r in scores.items()}}, indent=2, default=str) + "\n")
            log(f"total wall time {time.perf_counter() - start:.0f} s; load {load1()}; "
                f"log {log.path}")
            return
        for seed in seeds:
            sides = (() if args.no_stock else ("stock",)) \
                + tuple(side for side, on in extra.items() if seed in on) \
                + (() if args.no_bertkit else ("bertkit",))
            # seed 1: stock first, seed 2: bertkit first, ... (the seed, not its place in the
            # list: stages run one seed each keep alternating)
            for side in side_order(sides, seed - 1):
                before = load1()
                r = run_side(side, d, args, seed, f"{tmp}/{side}-{seed}", v2)
                r.update(load_before=before, load_after=load1(), threads=torch.get_num_threads())
                results.setdefault(side, {})[seed] = r
                log(row(side, seed, r, torch.get_num_threads()))
    gain, ratio = report(results, seeds, log, split)
    log(f"total wall time {time.perf_counter() - start:.0f} s; load {load1()}; log {log.path}")
    if args.json:
        write_json(args.json, vars(args), results, seeds, gain, ratio)


if __name__ == "__main__":
    main()
