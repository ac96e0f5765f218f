"""Gold answers that no span model can match exactly, counted per split before training.

A span model predicts whole word pieces, from a start piece to an end piece at most
``--max-answer-length`` pieces later (:mod:`bertkit.tasks.qa.decode`). Two kinds of gold answer
are therefore out of its reach, whatever it learns:

* an answer that starts or ends inside a piece (``toxicity`` in "cardiotoxicity", ``4`` in
  "2014": SQuAD-explorer#16, transformers#2372): the nearest prediction carries the rest of the
  piece, so its exact match is 0;
* an answer longer than ``--max-answer-length`` pieces (FARM#602, DrQA#148): the decoder never
  proposes it (the shared COVID-QA has 94 of 375 test questions whose every gold answer is longer
  than 30 pieces).

A question counts when *every* one of its gold answers is of the kind (the official scorers take
the best over gold answers), so the counts bound the exact match any model can reach.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

SHOWN = 3  # question ids named per kind; the rest are counted


def _pieces(contexts: list[str], tokenizer) -> list[np.ndarray]:
    """``[P, 2]`` character offsets of the context pieces of each text (no special pieces)."""
    offsets = tokenizer(contexts, add_special_tokens=False, return_offsets_mapping=True,
                        verbose=False)["offset_mapping"]  # verbose: no "longer than" warning
    return [np.asarray(o, dtype=np.int64).reshape(-1, 2) for o in offsets]


def answer_pieces(offsets: np.ndarray, start: int, end: int) -> tuple[int, bool]:
    """Pieces an answer ``[start, end)`` (characters) spans, and whether it starts or ends
    inside a piece.

    >>> offs = np.array([[0, 4], [4, 7], [8, 12]])  # "card" "iot" "oxic"
    >>> answer_pieces(offs, 4, 12), answer_pieces(offs, 5, 12)
    ((2, False), (2, True))
    """
    a, b = offsets[:, 0], offsets[:, 1]
    real = b > a
    n = int((real & (a < end) & (b > start)).sum())
    inside = bool((real & (((a < start) & (start < b)) | ((a < end) & (end < b)))).any())
    return n, inside


def gold_reach(examples: Sequence, tokenizer, max_answer_length: int,
               shown: int = SHOWN) -> dict:
    """What share of one split's answerable questions a span model can match exactly.

    Args:
        examples: :class:`~bertkit.tasks.qa.data.QAExample` (``context``, ``answers``,
            ``starts``).
        max_answer_length: the decoder's cap, in pieces.

    Returns:
        ``questions``, ``answerable`` (questions with gold answers), ``mid_piece`` / ``too_long`` (questions
        whose every gold answer starts or ends inside a piece / is longer than the cap),
        ``mid_piece_first`` / ``too_long_first`` (the first ``shown`` question ids),
        ``max_answer_length``, and ``cap_95``: the pieces that hold the shortest gold answer of
        95% of the answerable questions (the cap the data supports).
    """
    xs = [x for x in examples if x.answers]
    contexts = list(dict.fromkeys(x.context for x in xs))
    offsets = dict(zip(contexts, _pieces(contexts, tokenizer))) if contexts else {}
    mid, long_, shortest = [], [], []
    for x in xs:
        fits = [answer_pieces(offsets[x.context], s, s + len(t))
                for t, s in zip(x.answers, x.starts)]
        if all(inside for _, inside in fits):
            mid.append(x.qid)
        if all(n > max_answer_length for n, _ in fits):
            long_.append(x.qid)
        shortest.append(min(n for n, _ in fits))
    cap = int(np.ceil(np.percentile(shortest, 95))) if shortest else 0
    return {"questions": len(examples), "answerable": len(xs), "max_answer_length": max_answer_length,
            "mid_piece": len(mid), "mid_piece_first": mid[:shown],
            "too_long": len(long_), "too_long_first": long_[:shown], "cap_95": cap}


def _named(ids: list[str], total: int) -> str:
    more = f" and {total - len(ids)} more" if total > len(ids) else ""
    return ", ".join(repr(q) for q in ids) + more


def reach_lines(reach: dict[str, dict]) -> list[str]:
    """Warnings (without the ``warning:`` prefix) for the splits of :func:`gold_reach` results
    that hold answers out of reach; none when every answer can be matched."""
    out = []
    for split, r in reach.items():
        if r["too_long"]:
            out.append(
                f"{split}: {r['too_long']} of {r['answerable']} answerable questions have every "
                f"gold answer longer than --max-answer-length {r['max_answer_length']} pieces "
                f"(never predicted whole: exact match of the split at most "
                f"{100 * (1 - r['too_long'] / r['questions']):.1f}): "
                f"{_named(r['too_long_first'], r['too_long'])}; a cap of {r['cap_95']} pieces "
                f"holds 95% of the answers")
        if r["mid_piece"]:
            out.append(
                f"{split}: {r['mid_piece']} of {r['answerable']} answerable questions have every "
                f"gold answer starting or ending inside a word piece (a span of whole pieces "
                f"never matches it exactly): {_named(r['mid_piece_first'], r['mid_piece'])}")
    return out
