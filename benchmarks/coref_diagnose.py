"""Where a saved coreference model stands on a split: mention recall of the kept spans, mention
scores, links (the diagnosis docs/coref.md asks for when CoNLL F1 stays at 0).

For each document (whole, as ``evaluate coref`` reads it): gold mentions (and those within
``max_span_width``), kept spans (``top_lambda`` x words), the gold mentions among the kept spans
(pruning recall), kept spans and gold mentions with a positive mention score (what ``--singletons
on`` outputs), links (kept spans whose best antecedent beats the dummy) and the correct links
(antecedent in the same gold entity). Totals at the end, one JSON object a line.

    python benchmarks/coref_diagnose.py RUN_DIR --data litbank --split dev [--max-docs 3]
    python benchmarks/coref_diagnose.py --state RUN/checkpoints/step_80/model.pt [--base MODEL]
"""

from __future__ import annotations

import argparse
import json

import torch

from bertkit.encoders import load_tokenizer
from bertkit.tasks.coref.data import load_documents, resolve_coref
from bertkit.tasks.coref.encoding import collate, encode_documents
from bertkit.tasks.coref.model import load_model


@torch.inference_mode()
def diagnose(model, item, pad_id: int) -> dict:
    """Counts for one encoded document (see the module docstring)."""
    batch = collate([item], pad_id)
    x = model.word_vectors(batch["input_ids"], batch["attention_mask"], batch["piece_word"],
                           batch["n_words"])
    scores, _, (c_start, c_end, cand), kept, (a_s, a_e) = model._document(x, batch["sentence"])
    L = model.head.max_width
    gold = {(int(s), int(e)): int(c) for (s, e), c in zip(item.spans, item.clusters)}
    kept_spans = [(int(s), int(e)) for s, e in zip(c_start[kept], c_end[kept])]
    mention = scores.reshape(-1)[cand[kept]]
    flat = scores.reshape(-1)
    gold_pos = sum(1 for s, e in gold if e - s < L and float(flat[s * L + e - s]) > 0)
    ant = model.head.antecedent_scores(a_s, a_e, c_start[kept], c_end[kept])
    best = (ant.argmax(1) - 1).tolist()
    links = [(q, c) for q, c in enumerate(best) if c >= 0]
    correct = sum(1 for q, c in links if kept_spans[q] in gold and
                  gold.get(kept_spans[c]) == gold[kept_spans[q]])
    pair = ant[:, 1:][torch.isfinite(ant[:, 1:])]
    return {"words": item.n_words, "gold": len(gold),
            "gold_within_width": sum(1 for s, e in gold if e - s < L),
            "kept": len(kept_spans), "gold_kept": sum(1 for s in kept_spans if s in gold),
            "kept_positive": int((mention > 0).sum()), "gold_positive": gold_pos,
            "mention_score_kept_median": round(float(mention.median()), 3),
            "links": len(links), "links_correct": correct,
            "pair_score_max": round(float(pair.max()), 3) if len(pair) else None,
            "pair_score_median": round(float(pair.median()), 3) if len(pair) else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="a finished run (or its model/)")
    ap.add_argument("--state", help="instead: a checkpoint's model.pt or best.pt (state dict)")
    ap.add_argument("--base", default=None, help="with --state: the encoder (default packaged)")
    ap.add_argument("--max-length", type=int, default=384, help="with --state")
    ap.add_argument("--score", action="store_true", help="also the reference-scorer metrics of "
                    "the split (as evaluate coref; singletons on)")
    ap.add_argument("--data", default="litbank")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--max-docs", type=int, default=None)
    args = ap.parse_args()
    if args.state:
        from bertkit.encoders import default_model
        from bertkit.tasks.coref.model import build_model

        base = args.base or default_model()
        model = build_model(base, 384, 30, 0.3, 0.4)  # the defaults of finetune coref
        model.load_state_dict(torch.load(args.state, map_location="cpu"))
        model.eval()
        meta = {"path": base, "max_length": args.max_length}
    else:
        model, meta = load_model(args.model)
    tokenizer = load_tokenizer(meta["path"])
    docs = load_documents(resolve_coref(args.data, (args.split,))[args.split])[:args.max_docs]
    items, _ = encode_documents(docs, tokenizer, meta.get("max_length", 384))
    total: dict = {}
    for doc, item in zip(docs, items):
        row = diagnose(model, item, tokenizer.pad_token_id)
        print(json.dumps({"document": doc.name, **row}), flush=True)
        for k in ("gold", "gold_within_width", "kept", "gold_kept", "kept_positive",
                  "gold_positive", "links", "links_correct"):
            total[k] = total.get(k, 0) + row[k]
    total["pruning_recall"] = round(total["gold_kept"] / max(1, total["gold_within_width"]), 3)
    print(json.dumps({"document": "TOTAL", **total}))
    if args.score:
        from bertkit.tasks.coref.task import resolve_documents, score
        from bertkit.training.devices import make_runtime

        runtime = make_runtime("cpu", "fp32", None)
        predicted = resolve_documents(model, tokenizer, docs, runtime, meta.get("max_length", 384),
                                      1, True, items)
        print(json.dumps({"split": args.split, **score(docs, predicted)}))


if __name__ == "__main__":
    main()
