"""Parsing sentences with a :class:`~bertkit.tasks.dep.model.BiaffineParser` and scoring them."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from rich.console import Console

from bertkit.data.conllu import DepSentence
from bertkit.metrics.dep import attachment_scores
from bertkit.predict.inference import run_batches, sorted_batches
from bertkit.tasks.dep.encoding import collate, encode
from bertkit.tasks.dep.model import BiaffineParser
from bertkit.training.devices import Runtime


def parse_sentences(parser: BiaffineParser, tokenizer, sentences: Sequence[DepSentence],
                    runtime: Runtime, max_length: int, batch_size: int = 64,
                    decoder: str = "mst", word_repr: str = "first",
                    console: Console | None = None, encoded: list | None = None
                    ) -> tuple[list[np.ndarray], list[list[str]]]:
    """Parse every sentence: ``[n]`` heads (always a well-formed tree) and ``n`` relations each.

    Sentences are batched by length (longest first) so each batch is padded only to its own
    longest window; on a multi-core CPU two batches run at once
    (:func:`bertkit.predict.inference.run_batches`).

    Args:
        encoded: the sentences already encoded with :func:`encode` (reused across epochs).
    """
    if encoded is None:
        encoded, report = encode(sentences, tokenizer, {r: i for i, r in enumerate(parser.rels)},
                                 max_length)
        report.warn(sentences, console, "a head")
    heads: list = [None] * len(sentences)
    rels: list = [None] * len(sentences)
    names = np.asarray(parser.rels, dtype=object)
    lengths = np.asarray([e.n_pieces for e in encoded])
    parser.eval()
    parser.to(runtime.device)
    def predict(idx: np.ndarray) -> None:
        batch = runtime.to_device(collate([encoded[i] for i in idx], tokenizer.pad_token_id,
                                          word_repr == "mean"))
        with runtime.autocast():
            h, r = parser.parse(**batch, decoder=decoder)
        for row, i in enumerate(idx):
            heads[i], rels[i] = h[row], names[r[row]].tolist()

    run_batches(predict, sorted_batches(lengths, batch_size), runtime.device)
    return heads, rels


def score(sentences: Sequence[DepSentence], heads, rels, rule: str | None = None) -> dict:
    """:func:`~bertkit.metrics.dep.attachment_scores` of predictions against ``sentences``' gold."""
    return attachment_scores([s.heads for s in sentences], [s.rels for s in sentences], heads, rels,
                             [s.words for s in sentences], [s.upos for s in sentences], rule)
