"""Does domain adaptation pay? BC5CDR NER and ChemProt RE after DAPT, TAPT, both, and vocabulary
extension, each fine-tuned over several seeds (issue 13, part 1).

Variants (Gururangan et al. 2020, "Don't Stop Pretraining"; Beltagy et al. 2019 for SciVocab):

  (a) original    the packaged MiniLM encoder, no adaptation
  (b) DAPT        continued MLM on corpus/train.txt for --dapt-steps steps
  (c) TAPT        continued MLM on the task's training text (read by the fine-tuning reader,
                  relation markers stripped) for --tapt-epochs passes
  (d) DAPT+TAPT   (c) starting from (b)'s model
  (e) vocab+DAPT  `vocab extend` (--extend-vocab SciVocab words, ranked by the corpus), then (b)
  (v) vocab only  `vocab extend` alone, no pretraining: each new word's embedding is the mean of
                  the pieces the encoder split it into ("adaptive tokenization", Sachidananda et
                  al. 2021, "Efficient Domain Adaptation of Language Models via Adaptive
                  Tokenization"), the cheapest adaptation (minutes, no MLM head needed)
  (f) the best of (b)-(e) again with the other masking (span + SBO <-> token)

Each variant is fine-tuned with the same settings and seeds (NER: the bc5cdr-ner-minilm recipe,
lr 2e-4, CRF, 3 epochs; RE: lr 2e-4, 3 epochs, [CLS] pooling); the table gives the test score
(NER: strict entity F1; RE: micro-F1) as mean +- sample standard deviation over seeds, the
difference from (a), marked * when it is inside the larger of the two spreads (no gain shown),
and the adaptation minutes of each variant (its own pretraining stages, each counted in full).
The machine's load average is recorded before and after every run.

Every stage is resumable: rerun the same command with the same --out-dir and finished stages are
read back instead of run again (a stage whose settings changed runs again, with those after it).

Full measurement: pretraining DAPT 300 steps of 32 x 128 tokens (x2 with vocabulary extension
and x2 for the other masking), TAPT 10 epochs (BC5CDR's text packs into 1,204 sequences of 128
MiniLM tokens, 38 steps an epoch), and 2 tasks x 6 variants x 3 seeds of fine-tuning (one BC5CDR
NER run of 3 epochs is about 16 minutes on 2 CPU cores, from ner_vs_stock's 642 s for 2 epochs):
about ten hours on this machine, so run it where it can go unattended (it resumes):

    BERTKIT_DATA=../shared/data python benchmarks/adaptation.py --out-dir runs/adaptation

Smoke test (a couple of minutes; numbers meaningless, labelled REDUCED):

    head -2000 ../shared/data/corpus/train.txt > /tmp/corpus-slice.txt
    BERTKIT_DATA=../shared/data python benchmarks/adaptation.py --tasks ner --dapt-steps 2 \\
        --tapt-epochs 1 --tapt-max-sentences 100 --corpus /tmp/corpus-slice.txt \\
        --pretrain-batch-size 8 --extend-vocab 50 --seeds 1 --epochs 1 --batch-size 8 \\
        --max-train-samples 100 --max-eval-samples 100 --out-dir /tmp/adaptation-smoke \\
        --name adaptation_smoke
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model, quiet_transformers  # noqa: E402
from bertkit.workflows.adapt import (AdaptConfig, extend_stage,  # noqa: E402
                                     finetune_runs, pretrain_stage)
from bertkit.workflows.scores import score_summary, task_metrics  # noqa: E402
from bertkit.workflows.task_text import task_text_lines  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "adaptation"
FULL = {"dapt_steps": 300, "tapt_epochs": 10, "seeds": "1,2,3", "epochs": None, "batch_size": None,
        "max_train_samples": None, "max_eval_samples": None, "tapt_max_sentences": None,
        "pretrain_batch_size": 32}
TASKS = {  # task -> (data set, fine-tuning recipe, fine-tuning options, table title)
    "ner": ("bc5cdr", "bc5cdr-ner-minilm", {}, "BC5CDR NER, test entity F1 (strict)"),
    "re": ("chemprot", None, {"lr": 2e-4, "epochs": 3}, "ChemProt RE, test micro-F1"),
}
VARIANTS = {  # key -> (label, stages)
    "a": ("(a) original", ()),
    "b": ("(b) DAPT", ("dapt",)),
    "c": ("(c) TAPT", ("tapt",)),
    "d": ("(d) DAPT+TAPT", ("dapt", "tapt")),
    "e": ("(e) vocab+DAPT", ("vocab", "dapt")),
    "v": ("(v) vocab only", ("vocab",)),
}


def load() -> tuple[float, float, float]:
    """The 1-, 5- and 15-minute load averages (``_interleave.load_average``)."""
    from _interleave import load_average

    now = load_average()
    return now["load_1m"], now["load_5m"], now["load_15m"]


class Bench:
    """Runs (and on a rerun, reads back) the stages of every variant under ``root``."""

    def __init__(self, args, root: Path, log):
        self.args, self.root, self.log = args, root, log
        self.base = args.model or default_model()
        self.corpus = args.corpus or str(Path(os.environ["BERTKIT_DATA"]) / "corpus" / "train.txt")
        self.records: dict = {}

    def cfg(self, task: str, masking: str) -> AdaptConfig:
        a = self.args
        data, recipe, opts, _ = TASKS[task]
        return AdaptConfig(
            task=task, data=data, model=self.base, masking=masking, extend_vocab=a.extend_vocab,
            pretrain_steps=a.dapt_steps, tapt_epochs=a.tapt_epochs, pretrain_lr=a.pretrain_lr,
            pretrain_batch_size=a.pretrain_batch_size, max_seq_length=128,
            head_warmup_steps=a.head_warmup_steps, finetune_recipe=recipe,
            epochs=a.epochs or opts.get("epochs"), lr=opts.get("lr"), seeds=a.seeds,
            batch_size=a.batch_size,
            max_train_samples=a.max_train_samples, max_eval_samples=a.max_eval_samples,
            seed=42, device=a.device, cache_dir=a.cache_dir)

    def task_text(self, task: str) -> str:
        path = self.root / "pretrain" / f"task_text_{task}.txt"
        if not path.is_file():
            lines = task_text_lines(f"{task}:{TASKS[task][0]}")[:self.args.tapt_max_sentences]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return str(path)

    def adapted(self, task: str, stages: tuple, masking: str) -> tuple[str, float, list]:
        """The model after ``stages`` (each shared across variants and tasks where it can be),
        its adaptation seconds and the stage records."""
        cfg, model, seconds, parts, records = self.cfg(task, masking), self.base, 0.0, [], []
        for stage in stages:
            load0 = load()
            parts.append({"vocab": f"vocab{cfg.extend_vocab}", "dapt": "dapt"}.get(stage,
                                                                                 f"tapt-{task}"))
            folder = self.root / "-".join(parts) if stage == "vocab" else \
                self.root / "pretrain" / "-".join(parts + [masking])
            reused = (folder / "stage.json").is_file()
            if stage == "vocab":
                model, rec = extend_stage(cfg, model, [self.corpus], folder)
                seconds += rec["seconds"]
            else:
                corpus = self.corpus if stage == "dapt" else self.task_text(task)
                model, rec = pretrain_stage(cfg, stage, model, corpus, folder)
                seconds += rec["train_seconds"]
            self.log(f"  {'-'.join(parts)} ({masking}{', reused' if reused else ''}): "
                     + (f"{rec['added']} words added" if stage == "vocab" else
                        f"{rec['steps']} steps, final MLM loss "
                        f"{rec['train'].get('mlm_loss', float('nan')):.3f}")
                     + f", {(rec.get('seconds') or rec.get('train_seconds')) / 60:.1f} min; "
                       f"load {load0} -> {load()}")
            records.append({"stage": stage, "load_before": load0, "load_after": load(), **rec})
        return model, seconds, records

    def variant(self, task: str, key: str, label: str, stages: tuple, masking: str) -> dict:
        model, seconds, records = self.adapted(task, stages, masking)
        load0 = load()
        masked = any(stage != "vocab" for stage in stages)  # a pretraining stage: masking matters
        name = f"{key}-{masking}" if masked else key
        runs = finetune_runs(self.cfg(task, masking), model, self.root / task / name, label)
        scores = score_summary(task_metrics(task), runs)
        main = next(iter(scores))
        rec = {"label": label, "masking": masking if masked else None, "model": model,
               "adapt_minutes": seconds / 60, "scores": scores, "stages": records,
               "finetune_load": [load0, load()],
               "finetune_minutes": sum(r["train_seconds"] for r in runs) / 60}
        s = scores[main]
        self.log(f"  {label:<16} {rec['masking'] or '-':<6} {s['mean']:6.2f} +- {s['sd']:.2f} "
                 f"({', '.join(f'{v:.2f}' for v in s['values'])}); adaptation "
                 f"{rec['adapt_minutes']:.1f} min; load {load0} -> {load()}")
        return rec


def table(task: str, rows: list[dict]) -> list[str]:
    """The issue's table for one task, as text lines."""
    main = task_metrics(task)[0][0]
    a = rows[0]["scores"][main]
    out = [TASKS[task][3] + f", mean +- sd over {len(a['values'])} seed(s)",
           f"{'variant':<22} {'masking':<7} {'adapt min':>9} {'score':>16} {'vs (a)':>8}  per seed"]
    starred = False
    for r in rows:
        s = r["scores"][main]
        diff = s["mean"] - a["mean"]
        inside = len(s["values"]) > 1 and abs(diff) <= max(s["sd"], a["sd"])
        starred |= inside and r is not rows[0]
        out.append(f"{r['label']:<22} {r['masking'] or '-':<7} {r['adapt_minutes']:9.1f} "
                   f"{s['mean']:8.2f} +- {s['sd']:5.2f} "
                   f"{'' if r is rows[0] else f'{diff:+7.2f}' + ('*' if inside else ' '):>8}  "
                   + " ".join(f"{v:.2f}" for v in s["values"]))
    if starred:
        out.append("* inside the larger seed spread of the variant and (a): not a gain")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="ner,re", help="ner, re or ner,re.")
    ap.add_argument("--variants", default="a,b,c,d,e,v,f", help="Subset of a,b,c,d,e,v,f.")
    ap.add_argument("--model", default=None, help="Encoder (default: the packaged MiniLM).")
    ap.add_argument("--masking", default="span", choices=("span", "token", "wwm"),
                    help="Masking of (b)-(e); (f) reruns the best with the other of span/token.")
    ap.add_argument("--corpus", default=None, help="DAPT text (default: $BERTKIT_DATA/corpus/"
                    "train.txt).")
    ap.add_argument("--dapt-steps", type=int, default=FULL["dapt_steps"])
    ap.add_argument("--tapt-epochs", type=int, default=FULL["tapt_epochs"])
    ap.add_argument("--tapt-max-sentences", type=int, default=None,
                    help="TAPT on the first N training sentences only (smoke tests).")
    ap.add_argument("--pretrain-batch-size", type=int, default=FULL["pretrain_batch_size"])
    ap.add_argument("--pretrain-lr", type=float, default=1e-4)
    ap.add_argument("--head-warmup-steps", type=int, default=None,
                    help="Pass --head-warmup-steps to pretraining (where bertkit has it).")
    ap.add_argument("--extend-vocab", type=int, default=2000, help="Words added in (e).")
    ap.add_argument("--seeds", default=FULL["seeds"], help="Fine-tuning seeds.")
    ap.add_argument("--epochs", type=int, default=None, help="Fine-tuning epochs (default: 3).")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="Fine-tuning batch size (default: the task's, 32).")
    ap.add_argument("--max-train-samples", type=int, default=None)
    ap.add_argument("--max-eval-samples", type=int, default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out-dir", default="runs/adaptation", help="Runs (resumable).")
    ap.add_argument("--name", default=None, help="Log name under benchmarks/results/adaptation/ "
                    "(default: adaptation, or adaptation_reduced for a reduced budget).")
    args = ap.parse_args()
    os.environ.setdefault("BERTKIT_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    quiet_transformers()
    reduced = any(getattr(args, k) != v for k, v in FULL.items()) or args.tasks != "ner,re" \
        or args.corpus is not None
    name = args.name or ("adaptation_reduced" if reduced else "adaptation")
    RESULTS.mkdir(parents=True, exist_ok=True)
    log_path, lines = RESULTS / f"{name}.log", []

    def log(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)
        log_path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    import torch

    label = "REDUCED BUDGET (not the issue's measurement)" if reduced else "full budget"
    log(f"{label}; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; cpus {os.cpu_count()}, torch threads "
        f"{torch.get_num_threads()}, cuda {torch.cuda.is_available()}; load {load()}")
    log(f"settings: {json.dumps(vars(args))}")
    bench = Bench(args, Path(args.out_dir), log)
    wanted = args.variants.split(",")
    out = {"label": label, "args": vars(args), "tasks": {}}
    other = {"span": "token"}.get(args.masking, "span")
    for task in args.tasks.split(","):
        log(f"\n{TASKS[task][3]}")
        rows = [bench.variant(task, k, *VARIANTS[k], args.masking) for k in VARIANTS if k in wanted]
        main = task_metrics(task)[0][0]
        adapted = [r for r in rows if r["masking"]]
        if "f" in wanted and adapted:
            best = max(adapted, key=lambda r: r["scores"][main]["mean"])
            key = next(k for k, v in VARIANTS.items() if v[0] == best["label"])
            rows.append(bench.variant(task, "f", f"(f) {best['label'][4:]}, {other}",
                                      VARIANTS[key][1], other))
        out["tasks"][task] = rows
        (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    log(f"\n{label}")
    for task, rows in out["tasks"].items():
        log("")
        for line in table(task, rows):
            log(line)
    log(f"\nload at the end {load()}; runs under {args.out_dir}; log {log_path}")


if __name__ == "__main__":
    from bertkit.errors import BertkitError

    try:
        main()
    except BertkitError as exc:
        sys.exit(f"error: {exc}")
