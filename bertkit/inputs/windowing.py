"""Splitting long word sequences into overlapping encoder windows, shared by every word-level task.

A sentence longer than the encoder's window is split, on word boundaries, into windows
overlapping by about half a window; each word is *owned* by the window where it sits farthest
from an edge, so it is trained and predicted there only and every word gets exactly one
prediction (the tagger in :mod:`bertkit.tasks.ner.encoding` and the parser in
:mod:`bertkit.tasks.dep.encoding` both use it). :class:`EncodeReport` says what encoding had to
work around (words with no pieces, words longer than a window), for one warning per kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass
class EncodeReport:
    """What encoding had to work around, for warnings: (sentence, word) pairs, and how many
    sentences were windowed. Shared by the tagger and the parser."""

    empty_words: list[tuple[int, int]]
    long_words: list[tuple[int, int]]
    windowed_sentences: int

    def warn(self, sentences: Sequence, console, outcome: str = "one prediction") -> None:
        """Print one warning per kind of word worked around (no pieces, over-long), with the
        count and the first one's ``file:line``; ``outcome`` says what each still gets."""
        if console is None:
            return
        for kind, items in (("no word pieces: fed as [UNK]", self.empty_words),
                            ("more pieces than a window: extra pieces dropped", self.long_words)):
            if items:
                s, w = items[0]
                first = sentences[s]
                words = first.tokens if hasattr(first, "tokens") else first.words
                console.print(f"[yellow]warning:[/] {len(items)} word(s) with {kind}; first at "
                              f"{first.file}:{first.line_of(w)} ({words[w]!r}); each still gets "
                              f"{outcome}", highlight=False)


def window_bounds(counts: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Split words with piece ``counts`` ``[W]`` into windows of at most ``budget`` pieces.

    Returns:
        ``(start, end)`` word ranges (end exclusive) covering all words; consecutive windows overlap
        by about ``budget / 2`` pieces. A single word longer than ``budget`` forms its own window.

    >>> window_bounds(np.array([1, 1, 1, 1, 1]), 2)
    [(0, 2), (1, 3), (2, 4), (3, 5)]
    """
    W = len(counts)
    cum = np.concatenate([[0], np.cumsum(counts)])
    if cum[-1] <= budget:
        return [(0, W)]
    bounds = []
    start = 0
    while True:
        end = int(np.searchsorted(cum, cum[start] + budget, side="right")) - 1
        end = min(max(end, start + 1), W)
        bounds.append((start, end))
        if end >= W:
            return bounds
        nxt = int(np.searchsorted(cum, cum[end] - budget // 2, side="left"))
        start = min(max(nxt, start + 1), end)


def owners(bounds: list[tuple[int, int]], W: int) -> np.ndarray:
    """``[W]`` index of the window owning each word: the one where the word is farthest from an edge.

    >>> owners([(0, 2), (1, 3), (2, 4), (3, 5)], 5).tolist()
    [0, 0, 1, 2, 3]
    """
    words = np.arange(W)
    best = np.full(W, -1)
    best_margin = np.full(W, -1)
    for k, (s, e) in enumerate(bounds):
        inside = (words >= s) & (words < e)
        margin = np.minimum(words - s, e - 1 - words)
        better = inside & (margin > best_margin)
        best[better], best_margin[better] = k, margin[better]
    return best
