"""CRF tagger with and without the token cross-entropy term on its emissions, on a BC5CDR slice.

Sides (same data, seed and settings, one after the other in this process):

* ``crf-only``: the CRF negative log-likelihood alone (bertkit before issue 18);
* ``crf+token w``: plus the per-window token cross-entropy with weight ``w``
  (``bertkit.tasks.ner.model.TOKEN_LOSS_WEIGHT``).

``--weights`` lists the weights, one side each (0 = CRF only); run one weight per process to use
several cores.

For each: bertkit's test F1 (CRF Viterbi decoding), the F1 of the saved model run through
``pipeline("token-classification", aggregation_strategy="first")`` (emissions alone, no bertkit),
the entity-level agreement F1 between the two, and the B- tags the pipeline predicts.

Usage:
    BERTKIT_DATA=../shared/data OMP_NUM_THREADS=1 python benchmarks/ner_crf_token_loss.py \\
        [--max-train 400 --max-test 150 --epochs 2 --lr 2e-4 --batch-size 16 --seed 42]
        [--weights 0,1]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bertkit.tasks.ner.model as ner_model  # noqa: E402
from bertkit.data.conll import read_conll  # noqa: E402
from bertkit.data.sets import data_root  # noqa: E402
from bertkit.metrics.ner import entity_scores  # noqa: E402
from bertkit.tasks.ner import NERConfig, finetune_ner, predict_ner  # noqa: E402


def pipeline_tags(model_dir: str, sents) -> list[list[str]]:
    """Word-level IOB2 tags from pipeline(aggregation_strategy="first") on space-joined words."""
    from transformers import pipeline

    ner = pipeline("token-classification", model=model_dir, aggregation_strategy="first",
                   device="cpu")
    out = []
    for s in sents:
        starts = [0]
        for t in s.tokens[:-1]:
            starts.append(starts[-1] + len(t) + 1)
        tags = ["O"] * len(s.tokens)
        for ent in ner(" ".join(s.tokens)):
            words = [i for i, st in enumerate(starts) if ent["start"] <= st < ent["end"]]
            for j, i in enumerate(words):
                tags[i] = ("B-" if j == 0 else "I-") + ent["entity_group"]
        out.append(tags)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-train", type=int, default=400)
    ap.add_argument("--max-test", type=int, default=150)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--weights", default="0,1", help="token-loss weights, comma-separated")
    a = ap.parse_args()
    sents = read_conll(data_root() / "ner" / "bc5cdr" / "test.tsv").sentences[:a.max_test]
    gold = [s.tags for s in sents]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; BC5CDR first "
          f"{a.max_train} train sentences, dev first 100, scored on the first {a.max_test} test "
          f"sentences; epochs {a.epochs}, lr {a.lr}, batch {a.batch_size}, seed {a.seed}, --crf; "
          f"packaged MiniLM", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        inp = Path(tmp) / "test.txt"
        inp.write_text("".join(" ".join(s.tokens) + "\n" for s in sents), encoding="utf-8")
        for weight in (float(w) for w in a.weights.split(",")):
            side = "crf-only" if weight == 0 else f"crf+token {weight:g}"
            ner_model.TOKEN_LOSS_WEIGHT = weight
            run = Path(tmp) / side
            finetune_ner(NERConfig(data="bc5cdr", crf=True, epochs=a.epochs, lr=a.lr,
                                   batch_size=a.batch_size, seed=a.seed, device="cpu",
                                   max_train_samples=a.max_train, max_eval_samples=100,
                                   output_dir=str(run)))
            ours = [json.loads(l)["tags"] for l in predict_ner(
                str(run), str(inp), fmt="jsonl", input_format="text", device="cpu").splitlines()]
            theirs = pipeline_tags(str(run / "model"), sents)
            n_b = sum(t.startswith("B-") for tags in theirs for t in tags)
            print(f"{side:15s} bertkit F1 {100 * entity_scores(gold, ours)['f1']:6.2f}  "
                  f"pipeline(first) F1 {100 * entity_scores(gold, theirs)['f1']:6.2f}  "
                  f"agreement F1 {100 * entity_scores(ours, theirs)['f1']:6.2f}  "
                  f"pipeline B- tags {n_b} (gold {sum(t.startswith('B-') for g in gold for t in g)})",
                  flush=True)


if __name__ == "__main__":
    main()
