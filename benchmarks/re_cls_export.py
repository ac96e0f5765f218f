"""Which ``cls`` relation classifier to train, so that the saved model loads without remote code.

Two sides on ChemProt, same data, seed and settings, in one run (one after the other):

* ``pooler``: train the standard ``BertForSequenceClassification`` directly (``[CLS]`` ->
  the checkpoint's pooler, dense + tanh -> dropout -> linear), as the stock Hugging Face recipe;
* ``bertkit``: bertkit's default, unchanged training (``[CLS]`` state -> dropout -> linear, the
  custom class), saved as a standard ``BertForSequenceClassification`` with a near-identity pooler
  (:func:`bertkit.tasks.re.model.to_sequence_classifier`). Its saved ``model/`` is loaded with
  ``AutoModelForSequenceClassification`` (no remote code) and scored on the same dev pairs, which
  must give the dev micro-F1 the run selected.

Both run ``finetune_re`` with the packaged MiniLM on the first ``--max-train`` training pairs, best
epoch on the first ``--max-eval`` dev pairs (and test on the first ``--max-eval`` test pairs).

Usage:
    BERTKIT_DATA=../shared/data OMP_NUM_THREADS=1 python benchmarks/re_cls_export.py \
        [--max-train 500 --max-eval 200 --epochs 2 --lr 2e-4 --batch-size 16 --seed 42]

Prints dev micro-F1 (ChemProt has no negative label: micro-F1 = accuracy), dev macro-F1, test
micro-F1 and wall seconds per side, the difference, and the exported model's dev micro-F1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bertkit.tasks.re.task as re_task  # noqa: E402
from bertkit.encoders import load_tokenizer, quiet_transformers, resolve_model_source  # noqa: E402
from bertkit.tasks.re import REConfig, finetune_re  # noqa: E402
from bertkit.tasks.re.encoding import add_markers, encode  # noqa: E402
from bertkit.tasks.re.model import accept_relation_batches, build_relation_model  # noqa: E402


def build_pooler(model_name, labels, pooling, markers):
    """The standard class trained directly: AutoModelForSequenceClassification (with pooler)."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    quiet_transformers()
    model_name = resolve_model_source(model_name)
    tokenizer = load_tokenizer(model_name)
    marker_ids = add_markers(tokenizer, markers)
    config = AutoConfig.from_pretrained(model_name)
    config.num_labels = len(labels)
    config.id2label = dict(enumerate(labels))
    config.label2id = {v: k for k, v in config.id2label.items()}
    config.problem_type = "single_label_classification"
    model = AutoModelForSequenceClassification.from_pretrained(model_name, config=config,
                                                               attn_implementation="sdpa")
    model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    return accept_relation_batches(model), tokenizer, marker_ids


def exported_dev_f1(run_dir: Path, max_eval: int) -> tuple[str, float]:
    """Class name and dev micro-F1 of ``run_dir/model`` loaded with plain transformers."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from bertkit.metrics.re import relation_scores
    from bertkit.tasks.re.data import load_re_data
    from bertkit.tasks.re.encoding import MarkerSet
    from bertkit.training.devices import make_runtime

    path = run_dir / "model"
    model = AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=False)
    tok = AutoTokenizer.from_pretrained(path)
    markers = MarkerSet()
    mid = {m: tok.convert_tokens_to_ids(m) for m in markers.tokens()}
    dev = load_re_data("chemprot", ("dev",)).splits["dev"][:max_eval]
    items = encode(dev, tok, mid, markers, {}, 512)
    pred, _ = re_task.classify(model, items, make_runtime("cpu", "fp32"), tok.pad_token_id)
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    scores = relation_scores([ex.label for ex in dev], [labels[k] for k in pred], None, labels)
    return type(model).__name__, scores["micro_f1"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-train", type=int, default=500)
    ap.add_argument("--max-eval", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; ChemProt first "
          f"{a.max_train} train pairs, first {a.max_eval} dev/test pairs; epochs {a.epochs}, lr "
          f"{a.lr}, batch {a.batch_size}, seed {a.seed}; packaged MiniLM", flush=True)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side, builder in (("pooler", build_pooler), ("bertkit", build_relation_model)):
            re_task.build_relation_model = builder
            cfg = REConfig(data="chemprot", pooling="cls", max_train_samples=a.max_train,
                           max_eval_samples=a.max_eval, epochs=a.epochs, lr=a.lr,
                           batch_size=a.batch_size, seed=a.seed, device="cpu", precision="fp32",
                           output_dir=str(Path(tmp) / side))
            start = time.perf_counter()
            res = finetune_re(cfg)
            wall = time.perf_counter() - start
            rows[side] = res
            print(f"{side:8s} dev micro-F1 {100 * res['dev']['micro_f1']:6.2f}  dev "
                  f"macro-F1 {100 * res['dev']['macro_f1']:6.2f}  test micro-F1 "
                  f"{100 * res['test']['micro_f1']:6.2f}  best epoch {res['best_epoch']}  "
                  f"wall {wall:7.1f} s", flush=True)
            if side == "bertkit":
                cls_name, f1 = exported_dev_f1(Path(tmp) / side, a.max_eval)
                print(f"bertkit's saved model/ loaded as {cls_name} (no remote code): dev "
                      f"micro-F1 {100 * f1:6.2f}", flush=True)
    d = {(sp, k): 100 * (rows["bertkit"][sp][k] - rows["pooler"][sp][k]) for sp, k in
         (("dev", "micro_f1"), ("dev", "macro_f1"), ("test", "micro_f1"))}
    print(f"bertkit - pooler: dev micro-F1 {d['dev', 'micro_f1']:+.2f}, dev macro-F1 "
          f"{d['dev', 'macro_f1']:+.2f} points (test micro-F1 {d['test', 'micro_f1']:+.2f})")

if __name__ == "__main__":
    main()
