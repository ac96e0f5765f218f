"""Dependency parsing scores: UAS/LAS with and without punctuation, per relation, complete match.

* UAS: share of scored words with the gold head; LAS: with the gold head and relation.
* Punctuation (excluded in the headline scores, as SciBERT's and SuPar's evaluation): judged by the
  UPOS tag (``PUNCT`` or ``SYM``) when the gold UPOS column holds Universal Dependencies tags, else
  by the word form (every character a Unicode punctuation character, category ``P*``, SuPar's
  ``ispunct``). The rule used is returned as ``punct_rule``.
* Per relation (by gold relation): LAS recall, and precision/F1 against predicted relations.
* Complete match (UCM/LCM): share of sentences whose scored words are all right.
* ``nonprojective``: share of predicted (and of gold) trees with crossing arcs.

All counting is over the concatenated words of all sentences at once (no per-word loop).
"""

from __future__ import annotations

import unicodedata
from typing import Sequence

import numpy as np

from bertkit.decoding.eisner import is_projective

UD_UPOS = {"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
           "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"}


def is_punct_form(word: str) -> bool:
    """Every character of ``word`` is Unicode punctuation (category ``P*``)."""
    return bool(word) and all(unicodedata.category(c).startswith("P") for c in word)


def punct_rule(upos: Sequence[Sequence[str]]) -> str:
    """``"upos"`` when the tags (all sentences) are UD UPOS tags (any non-``_``), else ``"form"``."""
    tags = {t for s in upos for t in s} - {"_"}
    return "upos" if tags and tags <= UD_UPOS else "form"


def punct_mask(words: Sequence[str], upos: Sequence[str], rule: str) -> np.ndarray:
    """``[n]`` bool: which words count as punctuation under ``rule`` (``upos`` or ``form``)."""
    if rule == "upos":
        tags = np.asarray(upos, dtype=object)
        return (tags == "PUNCT") | (tags == "SYM")
    return np.asarray([is_punct_form(w) for w in words], dtype=bool)


RULE_TEXT = {"upos": "punctuation = UPOS PUNCT or SYM",
             "form": "punctuation = word forms made only of Unicode punctuation (the file has "
                     "no UD UPOS tags)"}


def attachment_scores(gold_heads: Sequence[np.ndarray], gold_rels: Sequence[Sequence[str]],
                      pred_heads: Sequence[np.ndarray], pred_rels: Sequence[Sequence[str]],
                      words: Sequence[Sequence[str]], upos: Sequence[Sequence[str]],
                      rule: str | None = None) -> dict:
    """Score predicted trees against gold (see module docstring). Scores are fractions in [0, 1].

    Returns:
        ``uas``, ``las`` (punctuation excluded), ``uas_punct``, ``las_punct`` (included), ``ucm``,
        ``lcm`` (punctuation excluded), ``nonprojective`` / ``gold_nonprojective``, ``per_rel``
        ``{rel: {las, precision, f1, support}}``, ``words``, ``scored_words``, ``sentences``,
        ``punct_rule`` and its description.
    """
    rule = rule or punct_rule(upos)
    lengths = np.asarray([len(h) for h in gold_heads])
    gh = np.concatenate([np.asarray(h, dtype=np.int64) for h in gold_heads]) if len(lengths) else \
        np.zeros(0, dtype=np.int64)
    ph = np.concatenate([np.asarray(h, dtype=np.int64) for h in pred_heads]) if len(lengths) else gh
    gr = np.concatenate([np.asarray(r, dtype=object) for r in gold_rels]) if len(lengths) else \
        np.zeros(0, dtype=object)
    pr = np.concatenate([np.asarray(r, dtype=object) for r in pred_rels]) if len(lengths) else gr
    punct = np.concatenate([punct_mask(w, u, rule) for w, u in zip(words, upos)]) \
        if len(lengths) else np.zeros(0, dtype=bool)
    arc = gh == ph
    lab = arc & (gr == pr)
    scored = ~punct
    sent = np.repeat(np.arange(len(lengths)), lengths)

    def frac(ok, m):
        return float(ok[m].mean()) if m.any() else 0.0

    wrong_u = np.bincount(sent, weights=(~arc & scored), minlength=len(lengths))
    wrong_l = np.bincount(sent, weights=(~lab & scored), minlength=len(lengths))
    per_rel = {}
    names, g_idx = np.unique(gr.astype(str), return_inverse=True)
    p_idx = np.searchsorted(names, pr.astype(str))
    p_known = (p_idx < len(names)) & (names[np.minimum(p_idx, len(names) - 1)] == pr.astype(str)) \
        if len(names) else np.zeros(len(pr), dtype=bool)
    support = np.bincount(g_idx[scored], minlength=len(names))
    correct = np.bincount(g_idx[scored & lab], minlength=len(names))
    predicted = np.bincount(p_idx[scored & p_known], minlength=len(names))
    for k, name in enumerate(names):
        rec = correct[k] / support[k] if support[k] else 0.0
        prec = correct[k] / predicted[k] if predicted[k] else 0.0
        per_rel[str(name)] = {"las": float(rec), "precision": float(prec),
                              "f1": float(2 * prec * rec / (prec + rec)) if prec + rec else 0.0,
                              "support": int(support[k])}
    n_sent = max(len(lengths), 1)
    return {
        "uas": frac(arc, scored), "las": frac(lab, scored),
        "uas_punct": frac(arc, np.ones_like(arc)), "las_punct": frac(lab, np.ones_like(lab)),
        "ucm": float((wrong_u == 0).sum() / n_sent), "lcm": float((wrong_l == 0).sum() / n_sent),
        "nonprojective": float(np.mean([not is_projective(h) for h in pred_heads]))
        if len(lengths) else 0.0,
        "gold_nonprojective": float(np.mean([not is_projective(h) for h in gold_heads]))
        if len(lengths) else 0.0,
        "per_rel": per_rel, "words": int(len(gh)), "scored_words": int(scored.sum()),
        "sentences": int(len(lengths)), "punct_rule": rule, "punct_rule_text": RULE_TEXT[rule],
    }
