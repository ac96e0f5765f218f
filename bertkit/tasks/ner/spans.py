"""IOB2 tags -> entity spans."""

from __future__ import annotations

from typing import Sequence


def sentence_spans(tokens: Sequence[str], tags: Sequence[str]) -> list[dict]:
    """Entity spans of a valid IOB2 sequence: ``{"start", "end", "type", "text"}``, word offsets,
    ``end`` exclusive, ``text`` the words joined by spaces.

    >>> sentence_spans(["aspirin", "induced", "renal", "failure"], ["B-Chem", "O", "B-Dis", "I-Dis"])
    [{'start': 0, 'end': 1, 'type': 'Chem', 'text': 'aspirin'}, {'start': 2, 'end': 4, 'type': 'Dis', 'text': 'renal failure'}]
    """
    spans = []
    start, etype = None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        if start is not None and not (tag.startswith("I-") and tag[2:] == etype):
            spans.append({"start": start, "end": i, "type": etype,
                          "text": " ".join(tokens[start:i])})
            start, etype = None, None
        if tag.startswith("B-") or (tag.startswith("I-") and start is None):
            start, etype = i, tag[2:]
    return spans
