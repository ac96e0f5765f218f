"""Gold answer lengths in word pieces per split of a QA set, and the share of questions each
``--max-answer-length`` cap can answer whole (issue 45, kind 4).

A span decoder never proposes an answer longer than its cap (:mod:`bertkit.tasks.qa.decode`), so
a question whose every gold answer is longer scores 0 exact match whatever the model learns. The
cap of ``recipes/finetune/covid-qa.yaml`` is chosen from the train and dev rows only.

    python benchmarks/qa_answer_lengths.py --data covid-qa > benchmarks/results/qa_vs_stock/qa_answer_lengths_covid-qa.log

Counts only (tokenisation, no model run): seconds on a CPU.
"""

from __future__ import annotations

import argparse

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="covid-qa", help="registered QA set or directory "
                        "(default covid-qa)")
    parser.add_argument("--model", default=None, help="tokenizer (default: the packaged "
                        "MiniLM encoder's WordPiece)")
    parser.add_argument("--caps", default="30,50,64,80,100,128,160",
                        help="caps to tabulate, in pieces (default 30,50,64,80,100,128,160)")
    args = parser.parse_args()

    from bertkit.encoders import default_model, load_tokenizer
    from bertkit.tasks.qa.checks import _pieces, answer_pieces, gold_reach
    from bertkit.tasks.qa.data import load_qa_data

    model = args.model or default_model()
    tokenizer = load_tokenizer(model)
    caps = [int(c) for c in args.caps.split(",")]
    data, files = load_qa_data(args.data, ("train", "dev", "test"))
    print(f"data {args.data}; tokenizer {model}; shortest gold answer of each answerable question, "
          f"in pieces")
    print(f"{'split':6} {'n':>5} {'median':>6} {'p90':>5} {'p95':>5} {'max':>4}  "
          + "  ".join(f"<={c:<4}" for c in caps) + "  mid-piece")
    for split, xs in data.items():
        xs = [x for x in xs if x.answers]
        contexts = list(dict.fromkeys(x.context for x in xs))
        offsets = dict(zip(contexts, _pieces(contexts, tokenizer)))
        n = np.array([min(answer_pieces(offsets[x.context], s, s + len(t))[0]
                          for t, s in zip(x.answers, x.starts)) for x in xs])
        mid = gold_reach(xs, tokenizer, caps[0])["mid_piece"]
        print(f"{split:6} {len(n):5d} {np.median(n):6.0f} {np.percentile(n, 90):5.0f} "
              f"{np.percentile(n, 95):5.0f} {n.max():4d}  "
              + "  ".join(f"{100 * (n <= c).mean():5.1f}%" for c in caps) + f"  {mid}")


if __name__ == "__main__":
    main()
