"""Tokens to leave the plateau: MLM learning curves of from-scratch recipes (issue 27, phase 1).

A model pretrained from scratch first predicts the most frequent tokens (the unigram plateau:
masked-token accuracy about 12% on ``corpus/valid.txt``) and is no better than random weights
when fine-tuned. This script measures, for named configurations, how many training tokens (and
minutes on this machine) a recipe needs to leave that plateau: valid MLM loss and masked-token
accuracy against tokens seen, from ``bertkit pretrain``'s own ``eval`` records.

Each configuration is one ``bertkit pretrain`` command line (size, vocabulary, learning rate and
warm-up with linear decay, batch and accumulation, dropout, masking rate, sequence length, token
budget), run as a user would run it, one stage at a time:

    python benchmarks/plateau_curves.py run a-4x256-b32-const1e-3 --max-minutes 45
    python benchmarks/plateau_curves.py collect a-4x256-b32-const1e-3 --run-dir RUN --load-log LOG
    python benchmarks/plateau_curves.py --merge

``run`` builds the configuration's vocabulary with ``bertkit vocab build`` into a work folder
(kept there for the next configuration), runs the pretraining (SIGTERM at ``--max-minutes``:
bertkit checkpoints and stops, the curve so far is kept), samples the 1-minute load average every
minute, and writes ``results/plateau_curves/plateau_<name>.json`` (command, settings, curve points: step, tokens
seen, training seconds, valid loss, accuracy, load). ``collect`` writes the same JSON from a run
directory started by hand with the configuration's command (``command`` prints it). ``--merge``
builds the "tokens to leave the plateau" table (tokens and minutes to reach 20% and 35%
masked-token accuracy, final values) into ``results/plateau_curves/plateau_curves.md``.

``run NAME --resume --max-minutes M`` continues a stopped run for M more minutes (the
schedule is constant after the warm-up, so the curve is that of one longer run).

On a GPU, where the token budgets that this CPU cannot reach take minutes (GPU_STAGES, through
``benchmarks/gpu_check.py``'s ``adapt`` step):

    python benchmarks/gpu_check.py --prepare .gpu_carry
    python benchmarks/plateau_curves.py gpu-carry --carry .gpu_carry   # + whole corpus, vocab
    python3 benchmarks/gpu_check.py --carry .gpu_carry --only adapt --budget-s 600 \
        --adapt-stages benchmarks/results/plateau_curves/gpu_stages_plateau.json --keep-work $OUT/gpu_check
    python benchmarks/plateau_curves.py collect NAME --run-dir <logs.tar.gz>/gpu_check/plateau/NAME \
        --command-file ...   # then --merge

Threads: one (``OMP_NUM_THREADS=1``), so another job can use the second core. Precision: fp32 on
this machine: its CPU (AMD EPYC, AVX2, no AVX512-BF16 or AMX) ran a bf16 step 15x slower than
fp32 (``results/plateau_curves/plateau_precision_probe.log``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "plateau_curves"
THRESHOLDS = (0.20, 0.35)  # masked-token accuracy: leaving the plateau, and the phase-1 gate
GATE_MINUTES = 150  # phase 1: one run of at most 2.5 hours on this machine

# name -> settings; every key but those of NOT_FLAGS is a `bertkit pretrain` flag. "vocab_corpus"
# is also the training corpus; "valid_corpus" (default "scientific") the validation text;
# "vocab_limit_alphabet" is `bertkit vocab build --limit-alphabet`.
# Phase 1b's common recipe: configuration g's settings on the general corpus, validated on the
# general valid set (every phase-1b configuration below changes one thing of it).
PHASE_1B = dict(
    config="layers=2,hidden=128", vocab_size=8000, vocab_corpus="general", valid_corpus="general",
    dropout=0.0, masking="token", mask_prob=0.30, valid_mask_prob=0.15, lr=1e-3, warmup=100,
    lr_schedule="constant", batch_size=32, gradient_accumulation=1, max_seq_length=128,
    max_tokens=40_000_000, eval_steps=100, max_eval_sequences=128, save_steps=500)

CONFIGS: dict[str, dict] = {
    # Cramming's choices (Geiping & Goldstein 2023): no dropout, sparse prediction (bertkit
    # always predicts at the masked positions only), a small vocabulary, peak lr 1e-3 after a
    # short warm-up; a batch of 32 x 128 (not 128 x 128) so that a 45-minute budget still gives
    # a few hundred optimiser steps at ~300-600 tokens/s on one shared thread. A constant rate
    # after the warm-up: the run is cut by time, and a curve cut at any point is then the curve
    # of a longer run (with a decay it would depend on where the budget ends).
    "a-4x256-b32-const1e-3": dict(
        config="layers=4,hidden=256", vocab_size=8000, vocab_corpus="scientific", dropout=0.0,
        masking="token", mask_prob=0.15, lr=1e-3, warmup=30, lr_schedule="constant",
        batch_size=32, gradient_accumulation=1, max_seq_length=128, max_tokens=8_000_000,
        eval_steps=25, max_eval_sequences=128),
    # The same with 30% of the tokens masked: twice the predictions per token processed (the
    # sparse decoder makes them cheap); Wettig et al. (2023) found 40% better than 15%.
    "b-4x256-b32-const1e-3-mask30": dict(
        config="layers=4,hidden=256", vocab_size=8000, vocab_corpus="scientific", dropout=0.0,
        masking="token", mask_prob=0.30, lr=1e-3, warmup=30, lr_schedule="constant",
        batch_size=32, gradient_accumulation=1, max_seq_length=128, max_tokens=8_000_000,
        eval_steps=25, max_eval_sequences=128),
    # A 2 x 128 encoder (BERT-tiny's shape) with the same recipe: about 6x cheaper per token,
    # so 6x more steps in the same minutes.
    "c-2x128-b32-const1e-3": dict(
        config="layers=2,hidden=128", vocab_size=8000, vocab_corpus="scientific", dropout=0.0,
        masking="token", mask_prob=0.15, lr=1e-3, warmup=30, lr_schedule="constant",
        batch_size=32, gradient_accumulation=1, max_seq_length=128, max_tokens=8_000_000,
        eval_steps=25, max_eval_sequences=128),
    # Issue 27 probes, second session: many more optimiser steps per token (batch 8 x 128, 4x
    # the updates of batch 32 at the same tokens), a longer linear warm-up (post-LN BERT needs
    # one), then a constant rate; the peak rate varied (5e-4 as ELECTRA-small, 2e-3 above c's).
    "d-2x128-b8-lr5e-4": dict(
        config="layers=2,hidden=128", vocab_size=8000, vocab_corpus="scientific", dropout=0.0,
        masking="token", mask_prob=0.15, lr=5e-4, warmup=500, lr_schedule="constant",
        batch_size=8, gradient_accumulation=1, max_seq_length=128, max_tokens=40_000_000,
        eval_steps=250, max_eval_sequences=128),
    "e-2x128-b8-lr2e-3": dict(
        config="layers=2,hidden=128", vocab_size=8000, vocab_corpus="scientific", dropout=0.0,
        masking="token", mask_prob=0.15, lr=2e-3, warmup=500, lr_schedule="constant",
        batch_size=8, gradient_accumulation=1, max_seq_length=128, max_tokens=40_000_000,
        eval_steps=250, max_eval_sequences=128, save_steps=1000),
    # c with 30% of the tokens masked: twice the MLM labels per token processed, for a curve
    # that follows tokens seen rather than steps or the rate (c, d and e lie on one another).
    "f-2x128-b32-lr1e-3-mask30": dict(
        config="layers=2,hidden=128", vocab_size=8000, vocab_corpus="scientific", dropout=0.0,
        masking="token", mask_prob=0.30, lr=1e-3, warmup=100, lr_schedule="constant",
        batch_size=32, gradient_accumulation=1, max_seq_length=128, max_tokens=40_000_000,
        eval_steps=100, max_eval_sequences=128, save_steps=500),
    # f's recipe validated at BERT's 15% (--valid-mask-prob), the gate's measure: the GPU
    # stages (GPU_STAGES), at 2 x 128 and at a's 4 x 256.
    "g-2x128-b32-lr1e-3-mask30-v15": dict(
        config="layers=2,hidden=128", vocab_size=8000, vocab_corpus="scientific", dropout=0.0,
        masking="token", mask_prob=0.30, valid_mask_prob=0.15, lr=1e-3, warmup=100,
        lr_schedule="constant", batch_size=32, gradient_accumulation=1, max_seq_length=128,
        max_tokens=40_000_000, eval_steps=100, max_eval_sequences=128, save_steps=500),
    "h-4x256-b32-lr1e-3-mask30-v15": dict(
        config="layers=4,hidden=256", vocab_size=8000, vocab_corpus="scientific", dropout=0.0,
        masking="token", mask_prob=0.30, valid_mask_prob=0.15, lr=1e-3, warmup=100,
        lr_schedule="constant", batch_size=32, gradient_accumulation=1, max_seq_length=128,
        max_tokens=40_000_000, eval_steps=100, max_eval_sequences=128, save_steps=500),
    # Phase 1b (issue 27): the general encoder G of benchmarks/reproduce.py never left the
    # plateau on Wikipedia with g's recipe (13.9% at 15% masking on corpus-general/valid.txt
    # after 37 M tokens; S, the same recipe on the scientific corpus, 36.3%). Variants of g on
    # the general corpus, validated on the general valid set at 15%:
    # i: no copy shortcut (every chosen token becomes [MASK]; phase 1 found the second plateau
    #    to be BERT's 10% unchanged tokens copied without context; Wettig et al. 2023, sec. 5).
    "i-g2x128-mask30-nocopy": {**PHASE_1B, "mask_replace_prob": 1.0, "random_replace_prob": 0.0},
    # j: 40% masking (Wettig et al. 2023 found 40% better than 15% for BERT-large; 30% was the
    #    lever of phase 1).
    "j-g2x128-mask40": {**PHASE_1B, "mask_prob": 0.40},
    # l: sequences of 64 (batch 64: the same 4,096 tokens a step). A position that attends
    #    uniformly averages over 64 tokens, not 128, so the signal that teaches it to find its
    #    neighbours is twice as strong (sequence-length warm-up, Li et al. 2022, starts short for
    #    this reason). Validated at 64 too.
    "l-g2x128-mask30-seq64": {**PHASE_1B, "batch_size": 64, "max_seq_length": 64,
                              "max_eval_sequences": 256},
    # m: l's recipe on the scientific corpus (SciVocab, validated on corpus/valid.txt at 64),
    #    against g there: does a recipe that helps G also help S (the same recipe for both)?
    "m-s2x128-mask30-seq64": {**PHASE_1B, "vocab_corpus": "scientific",
                              "valid_corpus": "scientific", "batch_size": 64,
                              "max_seq_length": 64, "max_eval_sequences": 256},
    # n: g on the first 3.6 M words of the general corpus (whole articles), the scientific
    #    corpus's size (the data README's equal-data comparison), G's vocabulary: S saw its 4.3 M
    #    tokens 8.5 times over 37 M, G its 12.6 M 2.9 times. Does the amount of distinct text
    #    (repetition) decide when a model leaves the plateau?
    "n-g2x128-mask30-words3.6M": {**PHASE_1B, "corpus_words": 3_600_000},
    # k: g with a WordPiece alphabet capped at 300 characters (G's 8 k vocabulary spends 1,771
    #    entries on single characters, most of them non-Latin; S's 159).
    "k-g2x128-mask30-alpha300": {**PHASE_1B, "vocab_limit_alphabet": 300},
}
CORPUS_FILES = {"scientific": "corpus/train.txt", "general": "corpus-general/train.txt"}
VALID_FILES = {"scientific": "corpus/valid.txt", "general": "corpus-general/valid.txt"}
NOT_FLAGS = ("vocab_size", "vocab_corpus", "valid_corpus", "vocab_limit_alphabet", "corpus_words")


def subset_path(work: Path, corpus: str, words: int) -> Path:
    """Where :func:`corpus_subset` writes the first ``words`` words of ``corpus``."""
    return work / f"{corpus}-{words}w.txt"


def corpus_subset(work: Path, corpus: str, words: int) -> Path:
    """The first ``words`` words of a registered corpus, cut at the end of an article (a blank
    line in ``corpus-general``) or of a line, written once to ``<work>/<corpus>-<words>w.txt``."""
    out = subset_path(work, corpus, words)
    if out.is_file():
        return out
    root = Path(os.environ["BERTKIT_DATA"])
    kept, count = [], 0
    with open(root / CORPUS_FILES[corpus], encoding="utf-8") as src:
        for line in src:
            if count >= words and not line.strip():
                break
            kept.append(line)
            count += len(line.split())
    tmp = out.with_suffix(".tmp")
    tmp.write_text("".join(kept), encoding="utf-8")
    tmp.replace(out)
    return out


def vocab_dir(work: Path, settings: dict) -> Path:
    """Where the configuration's vocabulary is built: ``<work>/vocab-<corpus>-<size>`` (plus
    ``-alpha<N>`` with a capped alphabet)."""
    alpha = settings.get("vocab_limit_alphabet")
    return work / (f"vocab-{settings['vocab_corpus']}-{settings['vocab_size']}"
                   + (f"-alpha{alpha}" if alpha else ""))


def pretrain_command(name: str, settings: dict, work: Path) -> list[str]:
    """The ``bertkit pretrain`` command line of a configuration (fp32, CPU, valid every
    ``eval_steps`` steps on the ``valid_corpus`` valid set, scientific by default)."""
    corpus = (str(subset_path(work, settings["vocab_corpus"], settings["corpus_words"]))
              if settings.get("corpus_words") else settings["vocab_corpus"])
    cmd = [sys.executable, "-m", "bertkit", "pretrain", "--corpus", corpus,
           "--valid", settings.get("valid_corpus", "scientific"), "--vocab",
           str(vocab_dir(work, settings))]
    return cmd + _flags(settings) + ["--precision", "fp32", "--device", "cpu", "-o",
                                     str(work / "runs" / name), "--overwrite"]


def _flags(settings: dict, **override) -> list[str]:
    """The configuration's ``bertkit pretrain`` flags (``override`` replaces or adds some)."""
    flags = {k: v for k, v in settings.items() if k not in NOT_FLAGS}
    flags = {"save_steps": 100, **flags, "logging_steps": 10, **override}
    out = []
    for key, value in flags.items():
        out += [f"--{key.replace('_', '-')}", f"{value:g}" if isinstance(value, float) else str(value)]
    return out


# On a GPU (benchmarks/gpu_check.py's ``adapt`` step): the same recipe in bf16 on cuda, for a
# token budget that this machine's 2.5 hours cannot reach. The carried folder holds the whole
# scientific corpus (gzipped), its valid set and the vocabulary built here (``gpu-carry``).
# f's recipe validated at 15% (g), then at 4 x 256 (h). Batch 32, not 8: the CPU curves (c, d,
# e) follow tokens seen, not optimiser steps, and a GPU step of these sizes is launch-bound.
GPU_STAGES = {"g-2x128-b32-lr1e-3-mask30-v15": {"max_tokens": 150_000_000, "timeout_s": 270},
              "h-4x256-b32-lr1e-3-mask30-v15": {"max_tokens": 150_000_000, "timeout_s": 270}}


def gpu_stages() -> list[dict]:
    """gpu_check.py ``--adapt-stages`` entries (``{"name", "argv", "timeout_s"}``) of GPU_STAGES:
    ``bertkit pretrain`` on ``{data}/plateau/`` (see :func:`gpu_carry`), run directory
    ``{work}/plateau/<name>`` (its metrics.jsonl comes back in gpu_check's logs.tar.gz; then
    ``collect NAME --run-dir ...`` gives the curve)."""
    stages = []
    for name, gpu in GPU_STAGES.items():
        settings = CONFIGS[name]
        steps = gpu["max_tokens"] // (settings["batch_size"] * settings["max_seq_length"])
        argv = ["{python}", "-m", "bertkit", "pretrain", "--corpus", "{data}/plateau/train.txt.gz",
                "--valid", "{data}/plateau/valid.txt", "--vocab",
                "{data}/plateau/" + vocab_dir(Path("."), settings).name]
        argv += _flags(settings, max_tokens=gpu["max_tokens"], eval_steps=max(steps // 60, 1),
                       save_steps=steps, logging_steps=max(steps // 200, 1))
        argv += ["--precision", "bf16", "--device", "cuda", "-o", "{work}/plateau/" + name,
                 "--overwrite"]
        stages.append({"name": f"plateau_{name}", "argv": argv, "timeout_s": gpu["timeout_s"]})
    return stages


def gpu_carry(carry: Path, work: Path) -> None:
    """Add ``<carry>/data/plateau/`` to a folder made by ``gpu_check.py --prepare``: the whole
    ``corpus/train.txt`` gzipped (about 6 MB), ``corpus/valid.txt`` and the GPU stages'
    vocabularies (built here by ``run``, so the GPU curve uses the same WordPiece vocabulary),
    and write ``results/plateau_curves/gpu_stages_plateau.json``."""
    import gzip
    import shutil

    root = Path(os.environ["BERTKIT_DATA"])
    dest = carry / "data" / "plateau"
    dest.mkdir(parents=True, exist_ok=True)
    with open(root / "corpus" / "train.txt", "rb") as src, \
            gzip.open(dest / "train.txt.gz", "wb", compresslevel=9) as out:
        shutil.copyfileobj(src, out)
    shutil.copyfile(root / "corpus" / "valid.txt", dest / "valid.txt")
    for name in GPU_STAGES:
        vocab = vocab_dir(work, CONFIGS[name])
        if not (vocab / "vocab.txt").is_file():
            raise SystemExit(f"{vocab} not built: run this configuration here first")
        shutil.copytree(vocab, dest / vocab.name, dirs_exist_ok=True)
    stages = RESULTS / "gpu_stages_plateau.json"
    stages.write_text(json.dumps(gpu_stages(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {dest} and {stages}")


def crossing(points: list[dict], threshold: float) -> dict | None:
    """The first curve point whose accuracy reaches ``threshold``, with the tokens and training
    seconds interpolated linearly from the point before (None if never reached).

    >>> pts = [{"tokens": 0, "seconds": 0, "accuracy": 0.1}, {"tokens": 100, "seconds": 10, "accuracy": 0.3}]
    >>> crossing(pts, 0.2)
    {'tokens': 50, 'seconds': 5.0}
    """
    before = None
    for point in points:
        if point["accuracy"] >= threshold:
            if before is None:
                return {"tokens": point["tokens"], "seconds": float(point["seconds"])}
            share = (threshold - before["accuracy"]) / (point["accuracy"] - before["accuracy"])
            return {"tokens": round(before["tokens"] + share * (point["tokens"] - before["tokens"])),
                    "seconds": round(before["seconds"] + share * (point["seconds"] - before["seconds"]), 1)}
        before = point
    return None


def load_at(samples: list[list[float]], seconds_since_start: float, start: float) -> float | None:
    """The 1-minute load average sampled nearest to a moment (None without samples)."""
    if not samples:
        return None
    moment = start + seconds_since_start
    return min(samples, key=lambda s: abs(s[0] - moment))[1]


def curve(run_dir: Path, load: list[list[float]]) -> tuple[list[dict], dict]:
    """The curve points of a run directory (the initial evaluation from ``results.json`` if the
    run finished, then each ``eval`` record of ``metrics.jsonl``) and its final results (empty if
    the run was stopped before writing them)."""
    records = [json.loads(line) for line in
               (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    train = [r for r in records if r["type"] == "train"]
    results_file = run_dir / "results.json"
    results = json.loads(results_file.read_text()) if results_file.is_file() else {}
    start = os.path.getmtime(run_dir / "environment.json")  # written as training starts
    points = []
    if results.get("valid_initial"):
        v = results["valid_initial"]
        points.append({"step": 0, "tokens": 0, "seconds": 0.0, "wall_s": 0.0, "loss": v["loss"],
                       "accuracy": v["accuracy"], "load1": None})
    for r in records:
        if r["type"] != "eval":
            continue
        window = [t["tokens_per_s"] for t in train if t["step"] <= r["step"]][-3:]
        points.append({"step": r["step"], "tokens": r["train_tokens"],
                       "seconds": r["train_seconds"], "wall_s": r["time_s"], "loss": r["loss"],
                       "accuracy": r["accuracy"], "tokens_per_s": round(sum(window) / len(window), 1)
                       if window else None, "load1": load_at(load, r["time_s"], start)})
    return points, results


def read_load(path: Path | None) -> list[list[float]]:
    """``[unix seconds, 1-minute load]`` samples of a load log (lines ``SECONDS LOAD1 ...``)."""
    if path is None or not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out.append([float(parts[0]), float(parts[1])])
    return out


def write_result(name: str, run_dir: Path, load: list[list[float]], command: list[str],
                 stopped: str | None) -> Path:
    """Write ``results/plateau_curves/plateau_<name>.json`` from a run directory; returns its path."""
    points, results = curve(run_dir, load)
    summary = {
        "name": name, "settings": CONFIGS.get(name), "command": shlex.join(command),
        "config_yaml": (run_dir / "config.yaml").read_text(encoding="utf-8"),
        "stopped": stopped, "finished": bool(results), "points": points,
        "crossings": {f"{t:.2f}": crossing(points, t) for t in THRESHOLDS},
        "final": points[-1] if points else None,
        "parameters": results.get("parameters"), "corpus_tokens": results.get("corpus_tokens"),
        "train_tokens": results.get("train_tokens", points[-1]["tokens"] if points else 0),
        "threads": results.get("torch_threads", 1),
        "load1": {"min": min((s[1] for s in load), default=None),
                  "max": max((s[1] for s in load), default=None),
                  "samples": len(load)},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"plateau_{name}.json"
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return out


def run(name: str, work: Path, max_minutes: float, resume: bool = False, threads: int = 1) -> None:
    """Build the vocabulary if needed, pretrain with a time limit, sample the load, write the JSON.

    ``resume``: continue the configuration's stopped run from its last checkpoint (bertkit
    ``--resume``; the schedule is constant after the warm-up, so the continued curve is the curve
    of one longer run) for ``max_minutes`` more; the load samples of the earlier part are lost.
    ``threads``: torch's intra-op threads (OMP/MKL), 1 by default so another job can use the
    second core; 2 for the gated 2.5-hour run on the whole machine."""
    settings = CONFIGS[name]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "RAYON_NUM_THREADS": "1",
           "BERTKIT_CACHE": str(work / "cache")}
    vocab = vocab_dir(work, settings)
    if not (vocab / "vocab.txt").is_file():
        root = Path(os.environ["BERTKIT_DATA"])
        subprocess.run([sys.executable, "-m", "bertkit", "vocab", "build", "--corpus",
                        str(root / CORPUS_FILES[settings["vocab_corpus"]]), "--size",
                        str(settings["vocab_size"]), "--out", str(vocab), "--no-progress"]
                       + (["--limit-alphabet", str(settings["vocab_limit_alphabet"])]
                          if settings.get("vocab_limit_alphabet") else []),
                       env=env, check=True)
    if settings.get("corpus_words"):
        corpus_subset(work, settings["vocab_corpus"], settings["corpus_words"])
    cmd = pretrain_command(name, settings, work)
    if resume:
        cmd = [a for a in cmd if a != "--overwrite"] + ["--resume"]
    log = (work / f"{name}.log").open("a" if resume else "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    load, deadline, stopped = [], time.time() + 60 * max_minutes, None
    while proc.poll() is None:
        load.append([time.time(), round(os.getloadavg()[0], 2)])
        if time.time() > deadline and stopped is None:
            proc.send_signal(signal.SIGTERM)  # bertkit saves a checkpoint and stops
            stopped = f"SIGTERM after {max_minutes} minutes"
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    write_result(name, work / "runs" / name, load, cmd, stopped)


def attention_use(name: str, checkpoint: Path, work: Path, valid_mask_prob: float = 0.15,
                  sequences: int = 128) -> dict:
    """Does a checkpoint use its context yet? Valid MLM loss and masked-token accuracy (the
    validation masks ``bertkit pretrain`` uses, at ``valid_mask_prob``) with the model as
    trained, and with every self-attention output set to zero (each token then sees only
    itself: the unigram-plus-copy model of the plateau). Equal values: attention is unused.

    Args:
        name: the configuration (size and vocabulary).
        checkpoint: a ``checkpoints/step_N`` folder (its ``model.pt``).
    Returns:
        ``{"trained": {"loss", "accuracy"}, "attention_zeroed": {...}, "step", ...}``.
    """
    import numpy as np
    import torch
    from transformers import AutoTokenizer

    from bertkit.masking import TokenMasker, VocabInfo
    from bertkit.tasks.pretrain.batches import validation_batches
    from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus
    from bertkit.tasks.pretrain.model import build_pretrain_model

    settings = CONFIGS[name]
    root = Path(os.environ["BERTKIT_DATA"])
    tok = AutoTokenizer.from_pretrained(vocab_dir(work, settings))
    cache = work / "cache"
    train = tokenize_corpus([str(root / CORPUS_FILES[settings["vocab_corpus"]])], tok, cache, None, False)
    valid = tokenize_corpus([str(root / VALID_FILES[settings.get("valid_corpus", "scientific")])],
                            tok, cache, None, False)
    seqs = PackedSequences(valid, settings["max_seq_length"], tok.cls_token_id, tok.sep_token_id,
                           sequences)
    batches = validation_batches(seqs, 64, TokenMasker(VocabInfo.from_tokenizer(tok, train.unigram),
                                                       valid_mask_prob, 0.8, 0.1))
    model, _ = build_pretrain_model(None, settings["config"], tok, sbo=False, sbo_weight=1.0,
                                    dropout=0.0)
    model.load_state_dict(torch.load(checkpoint / "model.pt", map_location="cpu"))
    model.eval()

    def score() -> dict:
        loss, right, n = 0.0, 0, 0
        with torch.no_grad():
            for b in batches:
                out, target = model(**b), b["labels"][b["labels"] != -100]
                loss += out["mlm_loss"].item() * target.numel()
                right += int((out["mlm_logits"].argmax(-1) == target).sum())
                n += target.numel()
        return {"loss": round(loss / n, 4), "accuracy": round(right / n, 4), "masked_tokens": n}

    trained = score()
    hooks = [layer.attention.output.dense.register_forward_hook(lambda m, i, o: o * 0)
             for layer in model.encoder.encoder.layer]
    zeroed = score()
    for h in hooks:
        h.remove()
    value_std = [round(float(np.std(layer.attention.self.value.weight.detach().numpy())), 4)
                 for layer in model.encoder.encoder.layer]
    out = {"name": name, "checkpoint": str(checkpoint), "valid_mask_prob": valid_mask_prob,
           "trained": trained, "attention_zeroed": zeroed, "value_weight_std": value_std}
    print(json.dumps(out))
    return out


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.0f}"


def merge() -> Path:
    """The "tokens to leave the plateau" table of every ``results/plateau_curves/plateau_*.json``."""
    rows = []
    for path in sorted(RESULTS.glob("plateau_*.json")):
        r = json.loads(path.read_text())
        final, s = r["final"] or {}, r["settings"] or {}
        rate = [p["tokens_per_s"] for p in r["points"] if p.get("tokens_per_s")]
        cells = []
        for t in THRESHOLDS:
            c = r["crossings"][f"{t:.2f}"]
            cells.append(f"{c['tokens'] / 1e6:.2f} M / {_minutes(c['seconds'])} min" if c else
                         f"not reached (> {final.get('tokens', 0) / 1e6:.2f} M)")
        load = r["load1"]
        corpus = s.get("vocab_corpus", "scientific") + (
            f" (first {s['corpus_words'] / 1e6:.1f} M words)" if s.get("corpus_words") else "")
        extra = "".join([
            f", alphabet <= {s['vocab_limit_alphabet']}" if s.get("vocab_limit_alphabet") else "",
            f", replace {s['mask_replace_prob']:g}/{s.get('random_replace_prob', 0.1):g} "
            f"[MASK]/random" if "mask_replace_prob" in s else ""])
        rows.append(
            f"| {r['name']} | corpus {corpus}, valid {s.get('valid_corpus', 'scientific')}; "
            f"{s.get('config', '?')}, vocab {s.get('vocab_size', '?')}{extra}, lr "
            f"{s.get('lr', '?')} (warm-up {s.get('warmup', '?')} steps, then "
            f"{s.get('lr_schedule', '?')}), batch {s.get('batch_size', '?')}x"
            f"{s.get('max_seq_length', '?')}, mask {s.get('mask_prob', '?')} (valid "
            f"{s.get('valid_mask_prob', s.get('mask_prob', '?'))}), dropout {s.get('dropout', '?')} | "
            f"{final.get('tokens', 0) / 1e6:.2f} M / {_minutes(final.get('seconds'))} min | "
            f"{sorted(rate)[len(rate) // 2] if rate else 0:.0f} | {final.get('loss', float('nan')):.3f} | "
            f"{100 * final.get('accuracy', 0):.1f}% | {cells[0]} | {cells[1]} | "
            f"{load['min']}-{load['max']} |")
    header = ("| configuration | settings | trained (tokens / training min) | tokens/s (median) | "
              "valid loss | masked-token acc. | to 20% | to 35% | load (1-min) |\n"
              "|---|---|---|---|---|---|---|---|---|")
    out = RESULTS / "plateau_curves.md"
    out.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    print(out.read_text())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", nargs="?", choices=("run", "collect", "command", "gpu-carry",
                                                         "attention"))
    ap.add_argument("name", nargs="?", choices=tuple(CONFIGS))
    ap.add_argument("--work", type=Path, default=Path("/tmp/plateau"),
                    help="vocabularies, token caches and run directories (not committed)")
    ap.add_argument("--max-minutes", type=float, default=55.0)
    ap.add_argument("--resume", action="store_true", help="run: continue the stopped run")
    ap.add_argument("--threads", type=int, default=1, help="run: torch threads (default 1)")
    ap.add_argument("--run-dir", type=Path, help="collect: the run directory")
    ap.add_argument("--checkpoint", type=Path, help="attention: a checkpoints/step_N folder")
    ap.add_argument("--load-log", type=Path, help="collect: lines 'UNIX_SECONDS LOAD1 ...'")
    ap.add_argument("--stopped", help="collect: how the run was stopped, if it was")
    ap.add_argument("--command-file", type=Path, help="collect: the command line the run was "
                                                      "started with (default: the configuration's)")
    ap.add_argument("--merge", action="store_true", help="build results/plateau_curves/plateau_curves.md")
    ap.add_argument("--carry", type=Path, default=Path(".gpu_carry"),
                    help="gpu-carry: the folder gpu_check.py --prepare made")
    args = ap.parse_args()
    if args.merge:
        merge()
        return
    if args.action == "gpu-carry":
        gpu_carry(args.carry, args.work)
        return
    if not args.action or not args.name:
        ap.error("give an action and a configuration name, or --merge")
    if args.action == "attention":
        attention_use(args.name, args.checkpoint, args.work)
    elif args.action == "command":
        print(shlex.join(pretrain_command(args.name, CONFIGS[args.name], args.work)))
    elif args.action == "run":
        run(args.name, args.work, args.max_minutes, args.resume, args.threads)
    else:
        run_dir = args.run_dir or args.work / "runs" / args.name
        command = (shlex.split(args.command_file.read_text()) if args.command_file else
                   pretrain_command(args.name, CONFIGS[args.name], args.work))
        write_result(args.name, run_dir, read_load(args.load_log), command, args.stopped)


if __name__ == "__main__":
    main()
