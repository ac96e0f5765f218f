"""Coreference scores as the reference CoNLL scorer computes them (Pradhan et al., 2014,
"Scoring Coreference Partitions of Predicted Mentions: A Reference Implementation", ACL;
conll/reference-coreference-scorers v8.01).

* MUC (Vilain et al., 1995): links. Recall = sum over key entities K of ``|K| - |p(K)|``
  over sum of ``|K| - 1``, where ``p(K)`` partitions K by the response entities (a key mention
  the response lacks is a part of its own); precision swaps key and response.
* B-cubed (Bagga & Baldwin, 1998): per mention. Recall = sum over K and response entities R of
  ``|K & R|^2 / |K|`` over the number of key mentions; precision swaps the roles.
* CEAF (Luo, 2005): the best one-to-one alignment of key and response entities (Kuhn-Munkres,
  ``scipy.optimize.linear_sum_assignment``) under a similarity phi: CEAF-m phi3 = ``|K & R|``
  (recall over the key mentions, precision over the response mentions), CEAF-e phi4 =
  ``2 |K & R| / (|K| + |R|)`` (recall over the number of key entities, precision over the
  number of response entities).
* BLANC (Recasens & Hovy, 2011, extended to predicted mentions by Luo et al., 2014): the mean of
  the F1 over coreference links and over non-coreference links, each link a pair of mentions.
* CoNLL F1 (Pradhan et al., 2012): the mean of the MUC, B-cubed and CEAF-e F1.

Mentions are matched by exact span. As the reference scorer does, a span repeated in one
document's response counts once (its first entity; the scorer prints "Repeated mention in the
response" and drops the later copies). A span repeated in the key also counts once here, in its
first entity, while the reference prints "Repeated mention in the key" and keeps the span (one
mention id) in each entity it was annotated in; the CoNLL-2012 reader warns of each such span
(:func:`bertkit.data.conll2012.parse_conll2012`'s notes), naming the document, span and
entities. Scores over several documents add
the numerators and denominators of every document (the scorer's ``all`` summary), not the
documents' F1. ``without singletons`` drops the entities of one mention from key and response
before scoring (the reference scores whatever it is given, so with singletons is its behaviour).
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Iterable, Sequence

import numpy as np

Mention = tuple  # (start, end), token indices within the document
Clusters = Sequence[Sequence[Mention]]
METRICS = ("muc", "bcub", "ceafm", "ceafe", "blanc")


def _dedupe(clusters: Clusters) -> list[list[Mention]]:
    """Each span once (its first entity), empty entities dropped."""
    seen: set = set()
    out = []
    for entity in clusters:
        kept = []
        for m in entity:
            m = tuple(m)
            if m not in seen:
                seen.add(m)
                kept.append(m)
        if kept:
            out.append(kept)
    return out


def _f1(r_num: float, r_den: float, p_num: float, p_den: float) -> tuple[float, float, float]:
    recall = float(r_num / r_den) if r_den else 0.0
    precision = float(p_num / p_den) if p_den else 0.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    return recall, precision, f1


def _muc_side(key: list[list[Mention]], response: list[list[Mention]]) -> tuple[int, int]:
    """(numerator, denominator) of MUC recall of ``response`` against ``key``."""
    owner = {m: k for k, entity in enumerate(response) for m in entity}
    num = den = 0
    for entity in key:
        parts = {owner.get(m, ("missing", m)) for m in entity}
        num += len(entity) - len(parts)
        den += len(entity) - 1
    return num, den


def _bcub_side(key: list[list[Mention]], response: list[list[Mention]]) -> tuple[float, int]:
    owner = {m: k for k, entity in enumerate(response) for m in entity}
    num = 0.0
    for entity in key:
        counts = Counter(owner[m] for m in entity if m in owner)
        num += sum(c * c for c in counts.values()) / len(entity)
    return num, sum(len(e) for e in key)


def _ceaf(key: list[list[Mention]], response: list[list[Mention]], phi4: bool
          ) -> tuple[float, float, float]:
    """(best total similarity, key self-similarity, response self-similarity)."""
    from scipy.optimize import linear_sum_assignment

    if phi4:
        key_den, resp_den = float(len(key)), float(len(response))
    else:
        key_den = float(sum(len(e) for e in key))
        resp_den = float(sum(len(e) for e in response))
    if not key or not response:
        return 0.0, key_den, resp_den
    index = {m: k for k, entity in enumerate(response) for m in entity}
    overlap = np.zeros((len(key), len(response)))  # [K, R] shared mentions
    for i, entity in enumerate(key):
        for m in entity:
            if m in index:
                overlap[i, index[m]] += 1
    if phi4:
        sizes = np.array([len(e) for e in key])[:, None] + np.array([len(e) for e in response])
        sim = 2 * overlap / sizes
    else:
        sim = overlap
    rows, cols = linear_sum_assignment(sim, maximize=True)
    return float(sim[rows, cols].sum()), key_den, resp_den


def _links(clusters: list[list[Mention]]) -> tuple[set, set]:
    """(coreference links, non-coreference links), each link a frozenset of two mentions."""
    coref = {frozenset(p) for e in clusters for p in combinations(e, 2)}
    mentions = [m for e in clusters for m in e]
    owner = {m: k for k, e in enumerate(clusters) for m in e}
    non = {frozenset((a, b)) for a, b in combinations(mentions, 2) if owner[a] != owner[b]}
    return coref, non


def _blanc_counts(key, response) -> np.ndarray:
    """``[6]``: common coref links, key coref, response coref, common non-coref, key non, resp non."""
    kc, kn = _links(key)
    rc, rn = _links(response)
    return np.array([len(kc & rc), len(kc), len(rc), len(kn & rn), len(kn), len(rn)], float)


def _blanc(c: np.ndarray) -> tuple[float, float, float]:
    """BLANC from summed link counts, as the reference scorer's ``ComputeBLANCFromCounts``
    (Luo et al., 2014): when the key has no coreference links only the non-coreference links
    count, when it has no non-coreference links only the coreference links; neither: 0."""
    common_c, key_c, resp_c, common_n, key_n, resp_n = c
    rc, pc, fc = _f1(common_c, key_c, common_c, resp_c)
    rn, pn, fn = _f1(common_n, key_n, common_n, resp_n)
    if key_c == 0 and key_n == 0:
        return 0.0, 0.0, 0.0
    if key_c == 0:
        return rn, pn, fn
    if key_n == 0:
        return rc, pc, fc
    return (rc + rn) / 2, (pc + pn) / 2, (fc + fn) / 2


def drop_singletons(clusters: Clusters) -> list[list[Mention]]:
    """The entities with two or more mentions."""
    return [list(e) for e in clusters if len(e) > 1]


def score_documents(keys: Iterable[Clusters], responses: Iterable[Clusters],
                    singletons: bool = True) -> dict[str, dict[str, float]]:
    """Score response clusters against key clusters over many documents.

    Args:
        keys / responses: per document, entities as lists of ``(start, end)`` mentions (any
            hashable mention id works); the two iterables are paired in order.
        singletons: False drops the one-mention entities on both sides first.

    Returns:
        ``{"muc"|"bcub"|"ceafm"|"ceafe"|"blanc": {"recall", "precision", "f1"}, "conll": {"f1"}}``,
        fractions in [0, 1]; counts summed over documents (the reference scorer's totals).

    >>> key = [[(0, 0), (1, 1), (2, 2)]]
    >>> s = score_documents([key], [[[(0, 0), (1, 1)], [(2, 2)]]])
    >>> round(s["muc"]["recall"], 4), s["muc"]["precision"]
    (0.5, 1.0)
    """
    sums = {"muc": np.zeros(4), "bcub": np.zeros(4), "ceafm": np.zeros(4),
            "ceafe": np.zeros(4), "blanc": np.zeros(6)}
    for key, response in zip(keys, responses):
        key, response = _dedupe(key), _dedupe(response)
        if not singletons:
            key, response = drop_singletons(key), drop_singletons(response)
        sums["muc"] += (*_muc_side(key, response), *_muc_side(response, key))
        sums["bcub"] += (*_bcub_side(key, response), *_bcub_side(response, key))
        for name, phi4 in (("ceafm", False), ("ceafe", True)):
            best, key_den, resp_den = _ceaf(key, response, phi4)
            sums[name] += (best, key_den, best, resp_den)
        sums["blanc"] += _blanc_counts(key, response)
    out = {}
    for name in ("muc", "bcub", "ceafm", "ceafe"):
        r, p, f = _f1(*sums[name])
        out[name] = {"recall": r, "precision": p, "f1": f}
    r, p, f = _blanc(sums["blanc"])
    out["blanc"] = {"recall": r, "precision": p, "f1": f}
    out["conll"] = {"f1": (out["muc"]["f1"] + out["bcub"]["f1"] + out["ceafe"]["f1"]) / 3}
    return out


def document_statistics(key: Clusters, response: Clusters, singletons: bool = True
                        ) -> np.ndarray:
    """The CoNLL F1's sufficient statistics of one document: ``[12]`` floats, for MUC, B-cubed
    and CEAF-e in turn: recall numerator, recall denominator, precision numerator, precision
    denominator (the reference scorer's per-document counts, Pradhan et al. 2014). Summed over
    documents they give :func:`score_documents`' totals; :func:`conll_from_statistics` scores
    such sums, so a paired bootstrap over documents costs one sum a resample.

    >>> key = [[(0, 0), (1, 1), (2, 2)]]
    >>> s = document_statistics(key, [[(0, 0), (1, 1)], [(2, 2)]])
    >>> s[:4].tolist()
    [1.0, 2.0, 1.0, 1.0]
    """
    key, response = _dedupe(key), _dedupe(response)
    if not singletons:
        key, response = drop_singletons(key), drop_singletons(response)
    best, key_den, resp_den = _ceaf(key, response, True)
    return np.asarray([*_muc_side(key, response), *_muc_side(response, key),
                       *_bcub_side(key, response), *_bcub_side(response, key),
                       best, key_den, best, resp_den], dtype=float)


def conll_from_statistics(s: np.ndarray) -> np.ndarray:
    """CoNLL F1 (the mean of MUC, B-cubed and CEAF-e F1; a fraction) of summed
    :func:`document_statistics`: ``[..., 12] -> [...]``, 0 where a denominator is 0."""
    s = np.asarray(s, dtype=float).reshape(*np.shape(s)[:-1], 3, 4)

    def ratio(num, den):
        return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den > 0)

    recall, precision = ratio(s[..., 0], s[..., 1]), ratio(s[..., 2], s[..., 3])
    f1 = ratio(2 * recall * precision, recall + precision)
    return f1.mean(axis=-1)


def coref_scores(keys: Sequence[Clusters], responses: Sequence[Clusters]) -> dict[str, float]:
    """The flat metrics of a run (percent, 0-100): ``conll_f1``, ``muc_f1``, ``bcub_f1``,
    ``ceafe_f1``, ``ceafm_f1``, ``blanc_f1`` and their recall/precision, with singletons; the same
    with the suffix ``_nosingletons`` without them; ``documents`` counted.

    The headline is ``conll_f1`` with singletons: LitBank annotates singletons and its papers
    score with them (Bamman et al., 2020, with the reference scorer)."""
    flat: dict[str, float] = {"documents": len(keys)}
    for suffix, keep in (("", True), ("_nosingletons", False)):
        scores = score_documents(keys, responses, keep)
        flat[f"conll_f1{suffix}"] = 100 * scores["conll"]["f1"]
        for name in METRICS:
            for part, short in (("recall", "r"), ("precision", "p"), ("f1", "f1")):
                flat[f"{name}_{short}{suffix}"] = 100 * scores[name][part]
    return flat
