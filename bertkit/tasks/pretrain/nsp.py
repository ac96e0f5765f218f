"""Sentence pairs for next-sentence prediction (NSP), as BERT's ``create_pretraining_data.py``.

For each document, sentences are gathered into a chunk until it reaches a target length
(``max_seq_length - 3``; with probability ``short_seq_prob`` a random shorter target in
``[2, max]``, so the model also sees short sequences); segment A is the chunk's first ``a_end``
sentences (``a_end`` uniform in ``[1, len(chunk) - 1]``); segment B is, half the time (and always
for a one-sentence chunk), text from a random other document (label 1, "random next": the unused
sentences of the chunk go back to the document), else the chunk's remaining sentences (label 0,
"is next"). The pair is truncated to fit, one token at a time from the longer segment, from its
front or back with equal chance. The output is ``[CLS] A [SEP] B [SEP]`` with token types 0/1.

One loop step per sentence (never per token); pairs are rebuilt each epoch from
``(seed, epoch)``, BERT's ``dupe_factor`` becoming dynamic pairing.

Reference: Devlin et al. (2019), sec. 3.1 (Task #2: NSP) and appendix A.2; the BERT release's
``create_pretraining_data.py`` (``create_instances_from_document``, ``truncate_seq_pair``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from bertkit.tasks.pretrain.data import TokenStream

IS_NEXT, RANDOM_NEXT = 0, 1


def _join(sentences: Sequence[np.ndarray]) -> list[int]:
    """Sentences concatenated as a list of ints (one C-level conversion, no per-token loop)."""
    return np.concatenate(sentences).astype(np.int64).tolist() if len(sentences) else []


@dataclass
class PairInstance:
    """One NSP example: ``input_ids`` ``[T]`` and ``token_type_ids`` ``[T]`` (int64) and the
    label (0: B follows A in the document, 1: B is random text)."""

    input_ids: np.ndarray
    token_type_ids: np.ndarray
    next_sentence_label: int


def truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: random.Random) -> None:
    """Shorten ``a`` and ``b`` in place to ``max_tokens`` together, always from the longer one,
    from its front or its back with equal probability (BERT's ``truncate_seq_pair``)."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def document_pairs(documents: Sequence[Sequence[np.ndarray]], index: int, max_seq_length: int,
                   cls_id: int, sep_id: int, rng: random.Random,
                   short_seq_prob: float = 0.1) -> list[PairInstance]:
    """The NSP pairs of document ``index`` (a list of sentences, each ``[n]`` token ids).

    Args:
        documents: every document of the corpus (random-next text is drawn from the others).
        index: the document to cut into pairs.
        max_seq_length: tokens per pair including ``[CLS]`` and two ``[SEP]``.
        cls_id / sep_id: the special token ids.
        rng: the seeded generator (Python's, as BERT's script).
        short_seq_prob: chance of a shorter target length for this document (BERT: 0.1).

    Returns:
        The pairs, in document order.
    """
    document = documents[index]
    max_tokens = max_seq_length - 3
    target = max_tokens if rng.random() >= short_seq_prob else rng.randint(2, max_tokens)
    pairs: list[PairInstance] = []
    chunk: list[np.ndarray] = []
    length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            if chunk:
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                a = _join(chunk[:a_end])
                if (len(chunk) == 1 or rng.random() < 0.5) and len(documents) > 1:
                    label = RANDOM_NEXT
                    other = index
                    for _ in range(10):
                        other = rng.randint(0, len(documents) - 1)
                        if other != index:
                            break
                    source = documents[other]
                    b: list[int] = []
                    for j in range(rng.randint(0, len(source) - 1), len(source)):
                        b.extend(_join(source[j:j + 1]))
                        if len(b) >= target - len(a):
                            break
                    i -= len(chunk) - a_end  # the unused sentences go back to the document
                else:
                    label = IS_NEXT
                    b = _join(chunk[a_end:])
                truncate_pair(a, b, max_tokens, rng)
                if a and b:
                    ids = np.asarray([cls_id, *a, sep_id, *b, sep_id], dtype=np.int64)
                    types = np.zeros(len(ids), dtype=np.int64)
                    types[len(a) + 2:] = 1
                    pairs.append(PairInstance(ids, types, label))
            chunk, length = [], 0
        i += 1
    return pairs


def epoch_pairs(documents: Sequence[Sequence[np.ndarray]], max_seq_length: int, cls_id: int,
                sep_id: int, seed: int, epoch: int,
                short_seq_prob: float = 0.1) -> list[PairInstance]:
    """All NSP pairs of one epoch, shuffled; the same for the same ``(seed, epoch)``."""
    rng = random.Random(seed * 1_000_003 + epoch)
    pairs = [p for d in range(len(documents))
             for p in document_pairs(documents, d, max_seq_length, cls_id, sep_id, rng,
                                     short_seq_prob)]
    rng.shuffle(pairs)
    return pairs


def stream_documents(stream: "TokenStream", pseudo_document_sentences: int = 64
                     ) -> tuple[list[list[np.ndarray]], bool]:
    """The corpus as documents of sentences, for next-sentence prediction.

    Sentence ``i`` is ``ids[start_i:end_i]`` with ``start_i`` the previous sentence's end, or one
    past a document's ``[SEP]`` when a document ends in between; each sentence is a view of the
    memory-mapped stream (no copy). A corpus of fewer than two documents (no blank line) is cut
    into pseudo-documents of ``pseudo_document_sentences`` consecutive sentences, since NSP's
    random-next segments must come from another document.

    Returns:
        (documents: lists of ``[n]`` token-id arrays, whether pseudo-documents were made).
    """
    ends = np.asarray(stream.sentence_ends, dtype=np.int64)
    doc_ends = np.asarray(stream.document_ends, dtype=np.int64)
    starts = np.zeros(len(ends), dtype=np.int64)
    starts[1:] = ends[:-1]
    # a sentence that follows a document separator starts just after it
    after_sep = np.isin(starts, doc_ends)
    starts[after_sep] += 1
    sentences = [stream.ids[a:b] for a, b in zip(starts.tolist(), ends.tolist())]
    pseudo = len(doc_ends) < 2
    if pseudo:
        cuts = np.arange(pseudo_document_sentences, len(sentences), pseudo_document_sentences)
    else:  # the document of each sentence: the number of separators before its end
        doc_of = np.searchsorted(doc_ends, ends)
        cuts = np.flatnonzero(np.diff(doc_of)) + 1
    bounds = [0, *cuts.tolist(), len(sentences)]
    documents = [sentences[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    return documents, pseudo



def split_long_sentences(documents: Sequence[Sequence[np.ndarray]], max_pieces: int,
                         end_ids: Sequence[int]) -> tuple[list[list[np.ndarray]], int]:
    """Each "sentence" (corpus line) longer than ``max_pieces`` cut after every sentence-final
    piece (``end_ids``: the ids of ``.``, ``!``, ``?``), so that a paragraph-a-line corpus (the
    registered ``general``, ~110 pieces a line) gives NSP sentences, as BERT's
    ``create_pretraining_data.py`` expects (one sentence a line); else whole lines fill a pair and
    its truncation drops the rest (transformers#12188, bert#13). The parts are views (no copy).

    Returns:
        (documents, number of lines cut).

    >>> docs = [[np.array([5, 1, 6, 7, 1]), np.array([8, 9])]]
    >>> out, n = split_long_sentences(docs, 3, [1])
    >>> [p.tolist() for p in out[0]], n
    ([[5, 1], [6, 7, 1], [8, 9]], 1)
    """
    ends = np.asarray(list(end_ids), dtype=np.int64)
    out, cut = [], 0
    for document in documents:
        sentences: list[np.ndarray] = []
        for s in document:
            if len(s) <= max_pieces or not len(ends):
                sentences.append(s)
                continue
            bounds = np.flatnonzero(np.isin(s[:-1], ends)) + 1  # [k] cut after each end piece
            parts = [p for p in np.split(s, bounds) if len(p)]
            cut += len(parts) > 1
            sentences.extend(parts)
        out.append(sentences)
    return out, cut
