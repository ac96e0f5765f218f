"""What ``bertkit bench`` needs to enter NER in a suite (:class:`~bertkit.tasks.base.SuiteSpec`):
entity F1 and PICO's token macro-F1 with their per-sentence statistics, read from the run's
``test_predictions.conll``; the test sentences for the contamination check; the families.

Averaging, as the papers define it: entity F1 is strict IOB2 span F1, micro-averaged over types
(seqeval ``mode="strict"``; SciBERT, BLURB); PICO is token-level macro-F1 over the span types,
``O`` excluded (SciBERT on EBM-NLP, Beltagy et al. 2019).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertkit.data.conll import read_conll
from bertkit.metrics.items import macro_f1, micro_f1, per_label
from bertkit.tasks.base import SuiteMetric, SuiteSpec


def strict_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """Entity spans of an IOB2 sequence as seqeval's strict mode counts them: a span starts at
    ``B-X`` and runs over the following ``I-X``; an ``I-X`` that continues no span is no entity.

    >>> sorted(strict_spans(["B-A", "I-A", "O", "I-A", "B-B"]))
    [('A', 0, 2), ('B', 4, 5)]
    """
    spans, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, typ = tag.partition("-")
        if start is not None and not (prefix == "I" and typ == kind):
            spans.add((kind, start, i))
            start = kind = None
        if prefix == "B":
            start, kind = i, typ
    return spans


def read_conll_predictions(path: Path) -> list[tuple[list[str], list[str]]]:
    """``(gold tags, predicted tags)`` per sentence of a ``token gold predicted`` file (NER's
    ``test_predictions.conll``; blank lines between sentences)."""
    sentences, gold, pred = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        cols = line.split("\t") if line.strip() else []
        if not cols:
            if gold:
                sentences.append((gold, pred))
            gold, pred = [], []
            continue
        gold.append(cols[-2])
        pred.append(cols[-1])
    return sentences


def entity_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 3]``: per test sentence, TP, FP, FN of its strict entity spans."""
    rows = []
    for gold, pred in read_conll_predictions(run_dir / "test_predictions.conll"):
        g, p = strict_spans(gold), strict_spans(pred)
        rows.append((len(g & p), len(p - g), len(g - p)))
    return np.asarray(rows, dtype=float).reshape(-1, 3)


def token_stats(run_dir: Path, results: dict) -> np.ndarray:
    """``[N, 3 T]``: per test sentence and span type (sorted), TP, FP, FN of its tokens, the
    ``B-``/``I-`` prefix dropped and ``O`` no type."""
    strip = [([t.split("-", 1)[1] if t != "O" else "O" for t in g],
              [t.split("-", 1)[1] if t != "O" else "O" for t in p])
             for g, p in read_conll_predictions(run_dir / "test_predictions.conll")]
    types = sorted({t for g, p in strip for t in g + p} - {"O"})
    return per_label(strip, types)


def sentence_texts(path: Path) -> list[str]:
    """The test file's sentences (the task's CoNLL reader), tokens joined by spaces.

    Raises:
        BertkitError: a file the reader refuses (file and line named).
    """
    return [" ".join(s.tokens) for s in read_conll(path).sentences]


SUITE = SuiteSpec(
    metrics=(
        SuiteMetric("entity_f1", "f1", "entity F1, strict IOB2 spans, micro over types "
                    "(seqeval strict)", stats=entity_stats, score=micro_f1),
        SuiteMetric("token_macro_f1", "token_macro_f1", "token-level macro-F1 over span "
                    "types, O excluded (SciBERT's PICO metric)", stats=token_stats,
                    score=macro_f1)),
    families={"ner": "named-entity recognition (BLURB)",
              "pico": "PICO evidence extraction (BLURB)"},
    test_texts=sentence_texts)
"""NER's suite declaration (``NERTask.suite``)."""
