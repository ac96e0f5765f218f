"""Domain-adaptive pretraining, measured: does continued MLM pretraining help BC5CDR NER?

1. Continue pretraining the packaged MiniLM encoder on the shared corpus twice, with the same
   budget (steps x batch x length): span masking + SBO, and token masking.
2. Fine-tune the original encoder and both continued ones on BC5CDR with the same settings.
3. Print the three test entity F1 scores (and the validation MLM figures of the pretraining).

The default budget (``--steps 300`` of 32 x 128 tokens, about 30 minutes for each pretraining
on 2 CPU cores) is the issue's; ``--steps``, ``--max-train-samples`` etc. give reduced runs,
which the output labels as such.

    python benchmarks/dapt_bc5cdr.py --json benchmarks/results/dapt_bc5cdr/dapt_bc5cdr.json
    python benchmarks/dapt_bc5cdr.py --steps 8 --max-train-samples 300 --max-eval-samples 200 \
        --ner-epochs 1   # reduced
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.encoders import default_model, quiet_transformers  # noqa: E402

FULL = {"steps": 300, "max_train_samples": None, "ner_epochs": 3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data = Path(os.environ.get("BERTKIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    os.environ.setdefault("BERTKIT_DATA", str(data))
    ap.add_argument("--steps", type=int, default=FULL["steps"], help="Pretraining steps per variant.")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-4, help="Pretraining peak learning rate.")
    ap.add_argument("--ner-epochs", type=int, default=FULL["ner_epochs"])
    ap.add_argument("--ner-lr", type=float, default=1e-4)
    ap.add_argument("--ner-batch-size", type=int, default=16)
    ap.add_argument("--max-train-samples", type=int, default=None)
    ap.add_argument("--max-eval-samples", type=int, default=None)
    ap.add_argument("--max-eval-sequences", type=int, default=256)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out-dir", default=None, help="Keep the runs here (default: a temporary folder).")
    ap.add_argument("--skip-pretrain", action="store_true",
                    help="Reuse the pretrained models already in --out-dir (fine-tune only).")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.skip_pretrain and not args.out_dir:
        ap.error("--skip-pretrain needs the --out-dir of an earlier run")
    quiet_transformers()
    reduced = (args.steps < FULL["steps"] or args.max_train_samples is not None
               or args.max_eval_samples is not None or args.ner_epochs < FULL["ner_epochs"])
    label = "REDUCED BUDGET (not the issue's full measurement)" if reduced else "full budget"
    print(f"{label}: pretraining {args.steps} steps x {args.batch_size} x {args.length} tokens per "
          f"variant; NER {args.ner_epochs} epoch(s), train sentences "
          f"{args.max_train_samples or 'all'}, eval sentences {args.max_eval_samples or 'all'}", flush=True)

    from bertkit.tasks.ner import NERConfig, finetune_ner
    from bertkit.tasks.pretrain import PretrainConfig, pretrain

    tmp = tempfile.TemporaryDirectory()
    root = Path(args.out_dir) if args.out_dir else Path(tmp.name)
    corpus = data / "corpus"
    out = {"label": label, "args": vars(args), "pretraining": {}, "ner_test": {}}
    models = {"original": default_model()}
    for name, masking in (("span+SBO", "span"), ("token", "token")):
        cfg = PretrainConfig(corpus=str(corpus / "train.txt"), valid=str(corpus / "valid.txt"),
                             model=default_model(), masking=masking, max_steps=args.steps,
                             batch_size=args.batch_size, max_seq_length=args.length, lr=args.lr,
                             warmup=0.06, eval_steps=args.steps, seed=args.seed,
                             max_eval_sequences=args.max_eval_sequences, cache_dir=args.cache_dir,
                             output_dir=str(root / f"pretrain-{masking}"), overwrite=True,
                             logging_steps=max(args.steps // 10, 1))
        if args.skip_pretrain:
            res = json.loads((root / f"pretrain-{masking}" / "results.json").read_text())
        else:
            res = pretrain(cfg)
        out["pretraining"][name] = {k: res[k] for k in ("train", "valid", "valid_initial",
                                                        "train_seconds", "tokens_per_second")}
        v0, v1 = res["valid_initial"], res["valid"]
        print(f"pretrained {name}: valid MLM loss {v0['loss']:.3f} -> {v1['loss']:.3f}, accuracy "
              f"{100 * v0['accuracy']:.1f}% -> {100 * v1['accuracy']:.1f}% "
              f"({res['train_seconds'] / 60:.1f} min)", flush=True)
        models[name] = str(root / f"pretrain-{masking}" / "model")
    for name, model in models.items():
        res = finetune_ner(NERConfig(model=model, data="bc5cdr", epochs=args.ner_epochs,
                                     lr=args.ner_lr, batch_size=args.ner_batch_size, seed=args.seed,
                                     max_train_samples=args.max_train_samples,
                                     max_eval_samples=args.max_eval_samples,
                                     output_dir=str(root / f"ner-{name.replace('+', '-')}"),
                                     overwrite=True))
        out["ner_test"][name] = {"f1": res["test"]["f1"], "precision": res["test"]["precision"],
                                 "recall": res["test"]["recall"], "best_epoch": res["best_epoch"]}
        print(f"NER fine-tuned from {name}: test F1 {100 * res['test']['f1']:.2f}", flush=True)
    print(f"\n{label}\nBC5CDR test entity F1 (strict):")
    for name, r in out["ner_test"].items():
        print(f"  {name:<10} {100 * r['f1']:6.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    tmp.cleanup()


if __name__ == "__main__":
    main()
