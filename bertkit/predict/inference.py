"""Inference batching: length-sorted batches, and on a multi-core CPU several batches at once.

A forward pass of a small encoder on a short batch keeps a few cores only partly busy: the
matrix products are small and every operator ends in a barrier of the intra-op thread pool. On a
CPU, :func:`run_batches` therefore runs ``workers`` batches at the same time in Python threads
(PyTorch operators release the GIL), each with its share of the cores. The outputs are the same as
running the batches one by one; on 2 cores with MiniLM on BC5CDR's test set, two
single-threaded workers were faster than one two-threaded loop in side-by-side runs (part of the
gain ``benchmarks/ner_predict_speed.py`` reports). On CUDA the batches run one by one (the GPU is the
bottleneck, and one stream keeps results in order).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

import numpy as np
import torch

T = TypeVar("T")


def sorted_batches(lengths: np.ndarray, batch_size: int, max_pieces: int | None = None
                   ) -> list[np.ndarray]:
    """Inference batches of indices, sorted by length (longest first), so each batch is padded
    only to its own longest item. ``lengths``: ``[N]`` ints; returns arrays of at most
    ``batch_size`` indices covering ``0..N-1`` once.

    A batch also holds at most ``max_pieces`` padded pieces (items x its longest; default
    ``batch_size`` x :data:`PIECES_PER_ROW`): where every item is that short or shorter the batches
    are plain slices of ``batch_size``, and long items go fewer to a batch, so that peak memory
    (attention scores grow with the batch's longest squared) is bounded by the batch size, not
    by the longest sentence a corpus happens to hold (issue 48: a 100 k-sentence input's peak
    RSS was 1.8x a 10 k one's with plain slices of 32).

    >>> [b.tolist() for b in sorted_batches(np.array([3, 300, 2, 9, 200]), 2)]
    [[1], [4], [3, 0], [2]]
    >>> [len(b) for b in sorted_batches(np.full(40, 512), 32)]
    [8, 8, 8, 8, 8]
    """
    limit = max_pieces if max_pieces is not None else batch_size * PIECES_PER_ROW
    return token_batches(lengths, limit, max_batch=batch_size)


PIECES_PER_ROW = 128
"""Padded pieces per batch row that :func:`sorted_batches` allows before it shrinks a batch."""


def token_batches(lengths: np.ndarray, max_tokens: int, max_batch: int = 1024
                  ) -> list[np.ndarray]:
    """Inference batches of indices sorted by length (longest first), each holding as many items
    as fit in ``max_tokens`` padded tokens (items x the batch's longest, at least one item,
    at most ``max_batch``): short items go many to a batch, long ones few, so every forward pass
    does about the same work (the token-based batching of fairseq's ``--max-tokens``, Ott et
    al. 2019). ``lengths``: ``[N]`` ints; returns arrays covering ``0..N-1`` once.

    >>> [b.tolist() for b in token_batches(np.array([3, 10, 2, 9, 2]), 20)]
    [[1, 3], [0, 2, 4]]
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    out, start = [], 0
    while start < len(order):
        longest = int(lengths[order[start]])
        size = max(1, min(max_batch, max_tokens // max(longest, 1)))
        out.append(order[start:start + size])
        start += size
    return out


def inference_workers(device: torch.device | str) -> int:
    """How many batches to run at once on ``device``: 2 on a CPU with 2+ intra-op threads, else 1."""
    return 2 if torch.device(device).type == "cpu" and torch.get_num_threads() >= 2 else 1


def run_batches(fn: Callable[[T], None], batches: Sequence[T], device: torch.device | str,
                workers: int | None = None) -> None:
    """Call ``fn(batch)`` once for every batch, under ``torch.inference_mode``.

    ``fn`` must store its own results (each batch writing to its own places). With ``workers`` > 1
    (default :func:`inference_workers`), batch ``i`` goes to worker ``i % workers``, so with
    length-sorted batches every worker gets a similar load; the process's intra-op thread count
    is divided among the workers for the duration and restored afterwards.

    Raises:
        whatever ``fn`` raises (the first error; the other workers stop at their next batch).
    """
    workers = inference_workers(device) if workers is None else max(1, workers)
    workers = min(workers, len(batches)) or 1
    if workers == 1:
        with torch.inference_mode():
            for batch in batches:
                fn(batch)
        return
    failed = threading.Event()

    def work(k: int) -> None:
        with torch.inference_mode():
            for batch in batches[k::workers]:
                if failed.is_set():
                    return
                try:
                    fn(batch)
                except BaseException:
                    failed.set()
                    raise

    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, threads // workers))
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bertkit-infer") as pool:
            for future in [pool.submit(work, k) for k in range(workers)]:
                future.result()
    finally:
        torch.set_num_threads(threads)
