"""Prediction speed on the BC5CDR test set: bertkit vs the stock Hugging Face recipe, repeated.

Prediction speed does not depend on the trained weights, so both sides use the packaged MiniLM
encoder with the same freshly initialised 3-label head. Each repeat runs the stock recipe
(``Trainer.predict`` on the tokenised test set, its default eval batch of 8, then argmax and
first-subword alignment, as ``ner_vs_stock.py``) and bertkit (``tag_sentences`` with its defaults:
length-sorted batches of 32 windows, two at a time on a multi-core CPU, the last layer computed at
first pieces only, constrained Viterbi) one after the other, alternating which goes first; the
medians are compared. Tokenisation is timed separately for both and reported beside.

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/ner_predict_speed.py [--repeat 3] [--json OUT]
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

from bertkit.encoders import default_model, quiet_transformers  # noqa: E402
from bertkit.tasks.ner.data import load_ner_data  # noqa: E402
from bertkit.tasks.ner.encoding import encode  # noqa: E402
from bertkit.tasks.ner.model import build_tagger  # noqa: E402
from bertkit.tasks.ner.task import tag_sentences  # noqa: E402
from bertkit.training.devices import make_runtime  # noqa: E402
from ner_vs_stock import stock_dataset  # noqa: E402  (same folder: the stock recipe's tokenisation)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="bc5cdr")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    quiet_transformers()
    import datasets
    from transformers import (AutoTokenizer, DataCollatorForTokenClassification, Trainer,
                              TrainingArguments)

    datasets.disable_progress_bars()
    data = load_ner_data(args.data)
    test_s = data.splits["test"]
    labels = sorted({t for s in data.splits["train"] for t in s.tags})
    label2id = {lab: i for i, lab in enumerate(labels)}
    tok = AutoTokenizer.from_pretrained(default_model())
    torch.manual_seed(0)
    tagger = build_tagger(default_model(), labels, crf=False, label_all_subwords=False).eval()
    runtime = make_runtime("cpu", "fp32")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {len(test_s)} test "
          f"sentences; repeats {args.repeat}", flush=True)

    out = tempfile.mkdtemp(prefix="bertkit-predict-bench-")
    trainer = Trainer(model=tagger.encoder, args=TrainingArguments(
        output_dir=out, report_to=[], disable_tqdm=True, use_cpu=True),
        data_collator=DataCollatorForTokenClassification(tok))

    def stock_predict(ds):
        pred = trainer.predict(ds)
        ids = np.argmax(pred.predictions, axis=2)
        return [[labels[p] for p, g in zip(ids[i], pred.label_ids[i]) if g != -100]
                for i in range(len(test_s))]

    times = {"stock": [], "bertkit": [], "stock_tokenise": [], "bertkit_encode": []}
    for r in range(args.repeat):
        for side in (("stock", "bertkit") if r % 2 == 0 else ("bertkit", "stock")):
            start = time.perf_counter()
            if side == "stock":
                ds = stock_dataset(test_s, tok, label2id)
                times["stock_tokenise"].append(time.perf_counter() - start)
                start = time.perf_counter()
                stock_predict(ds)
            else:
                windows, _ = encode(test_s, tok, label2id, 512)
                times["bertkit_encode"].append(time.perf_counter() - start)
                start = time.perf_counter()
                tag_sentences(tagger, tok, test_s, runtime, 512, windows=windows)
            times[side].append(time.perf_counter() - start)
            print(f"repeat {r + 1} {side:8s} {times[side][-1]:6.1f} s", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"median prediction: stock {med['stock']:.1f} s, bertkit {med['bertkit']:.1f} s "
          f"-> bertkit {med['stock'] / med['bertkit']:.2f}x faster "
          f"(min over repeats {min(times['stock']) / max(times['bertkit']):.2f}x)")
    print(f"tokenisation (not in the figures above): stock {med['stock_tokenise']:.1f} s, "
          f"bertkit {med['bertkit_encode']:.1f} s; with it: "
          f"{(med['stock'] + med['stock_tokenise']) / (med['bertkit'] + med['bertkit_encode']):.2f}x")
    shutil.rmtree(out, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps({"seconds": times, "median": med}, indent=2) + "\n")


if __name__ == "__main__":
    main()
