"""Linear-chain conditional random field over word-level tag scores, constrained to valid IOB2.

Reference: Lafferty, McCallum & Pereira (2001), "Conditional Random Fields", sec. 3; the BERT-CRF
tagger of Souza et al. (2019). Transitions that IOB2 forbids (``O -> I-X``, ``B-X -> I-Y``,
start ``-> I-X``) are fixed at a large negative score in training and decoding, so the model never
spends probability mass on invalid sequences and Viterbi only returns valid ones.

The log-partition is a parallel scan in the log semiring (Rush, 2020, "Torch-Struct",
sec. "Optimizations", parallel scan inference, fig. 4; Sarkka & Garcia-Fernandez, 2021, "Temporal
Parallelization of Bayesian Smoothers", sec. III, the associative formulation of the recursion):
log2(W) batched levels instead of a Python loop of W-1 steps each mirrored by autograd, the gold
score one gather, decoding the matching max-plus scan (:mod:`bertkit.decoding.viterbi`). Shapes
depend on the padded width ``W`` only and nothing is read back to the host, so the loss compiles
to one graph and a GPU step waits on no sync (issue 61; ``tests/heads/test_crf_scan.py`` checks
both, and that the scan equals the sequential forward algorithm).
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from bertkit.data.tagging import allowed_transitions
from bertkit.decoding.viterbi import chain_edges, pairs, viterbi_decode

FORBIDDEN = -1e4  # added to forbidden transitions; exp(-1e4) == 0 in float32


EXP_FLOOR = -80.0  # exp(-80) = 1.8e-35: no term below it changes a float32 or float64 sum of >= 1


def _logsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``torch.logsumexp(x, dim)`` for finite ``x``, with ``x - max`` clamped at ``EXP_FLOOR``.

    The clamp changes the value by at most ``C * exp(-80)`` relative (invisible in float32 and
    float64) and zeroes gradients below ``exp(-80)``; it keeps ``exp`` off its slow paths: on
    this CPU (AMD EPYC, torch 2.13) ``exp`` of arguments whose result underflows (the identity's
    ``-1e9``, the forbidden ``-1e4``) runs 5x slower, and of those giving denormals (-87 to -103)
    up to 20x slower, which made the padded scan slower than the loop.
    """
    top = x.amax(dim=dim, keepdim=True).detach()  # the value does not depend on it
    return (x - top).clamp(min=EXP_FLOOR).exp().sum(dim=dim).log() + top.squeeze(dim)


def log_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Matrix product in the log semiring:
    ``out[..., i, j] = logsumexp_k (a[..., i, k] + b[..., k, j])``.

    Args: ``a`` ``[..., C, C]``, ``b`` ``[..., C, C]`` float, finite (same batch shape). Returns
    ``[..., C, C]``. Holds a ``[..., C, C, C]`` intermediate (kept by autograd): C^3 per product,
    the price of exactness (an ``exp``-space ``matmul`` underflows for entries far from the row
    and column maxima) for the small tag sets of NER (C = 3 to 13 in bertkit's sets).
    """
    return _logsumexp(a.unsqueeze(-1) + b.unsqueeze(-3), dim=-2)


def log_partition(emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor,
                  start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """Log-partition ``log Z`` of a linear-chain CRF per row, by a parallel scan in log space.

    Args:
        emissions: ``[B, W, C]`` float; mask: ``[B, W]`` bool, a prefix of each row;
        transitions: ``[C, C]``; start, end: ``[C]`` (same float dtype as ``emissions``).

    Returns:
        ``[B]``: ``log sum_y exp(score(y))`` over the tag paths of each row's real positions (an
        empty row gives a finite value; callers mask it out).

    The forward algorithm (Lafferty et al., 2001, sec. 3) multiplies ``W-1`` edge matrices in the
    log semiring one after another; the product is associative, so it is reduced pairwise as a
    balanced tree (Rush, 2020, "Torch-Struct", sec. "Optimizations", fig. 4, ``linearchain.py``'s
    ``_dp_scan``; Sarkka & Garcia-Fernandez, 2021, sec. III): ``ceil(log2(W-1))`` batched levels
    over the edges of :func:`~bertkit.decoding.viterbi.chain_edges` (masked steps as the semiring identity;
    each level padded to even, where torch-struct pads the chain to a power of two: same depth,
    fewer products). The depth depends on ``W`` only (a static shape); the work is
    O(W C^3) per row against the loop's O(W C^2), which the GPU absorbs and a CPU may not.
    """
    first = start.unsqueeze(0) + emissions[:, 0]  # [B, C]
    if emissions.shape[1] > 1:
        level = chain_edges(emissions, mask, transitions)  # [B, W-1, C, C]
        while level.shape[1] > 1:
            level = log_matmul(*pairs(level))
        first = torch.logsumexp(first.unsqueeze(2) + level[:, 0], dim=1)  # [B, C]
    return torch.logsumexp(first + end.unsqueeze(0), dim=1)


class LinearChainCRF(nn.Module):
    """CRF with learned start, end and transition scores over ``C`` IOB2 labels.

    Args:
        labels: the C label strings (IOB2), in label-id order.
    """

    def __init__(self, labels: Sequence[str]) -> None:
        super().__init__()
        C = len(labels)
        start_ok, trans_ok = allowed_transitions(labels)
        self.start_transitions = nn.Parameter(torch.zeros(C))
        self.end_transitions = nn.Parameter(torch.zeros(C))
        self.transitions = nn.Parameter(torch.zeros(C, C))
        self.register_buffer("start_penalty", (~torch.tensor(start_ok)).float() * FORBIDDEN)
        self.register_buffer("trans_penalty", (~torch.tensor(trans_ok)).float() * FORBIDDEN)

    def scores(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(transitions ``[C, C]``, start ``[C]``, end ``[C]``) with the IOB2 constraints applied."""
        return (self.transitions + self.trans_penalty,
                self.start_transitions + self.start_penalty,
                self.end_transitions)

    def forward(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Negative log-likelihood of the gold tags, summed over the batch rows.

        Args:
            emissions: ``[B, W, C]`` float, word-level tag scores (bf16/fp16 are computed in
                fp32, fp64 stays fp64).
            tags: ``[B, W]`` long, gold tag ids (any value where ``mask`` is False).
            mask: ``[B, W]`` bool, True on real words, a prefix of each row; rows may be empty.

        Returns:
            scalar float: ``sum_b (log Z_b - score_b(gold))`` (empty rows contribute 0), the
            negative log of Lafferty et al.'s (2001) eq. 1-2 (sec. 3).

        The gold score is gathered for all positions at once and the log-partition ``log Z`` is
        the parallel scan of :func:`log_partition` (log2(W) batched steps, not W-1): no host
        reads and no shape that depends on the data, so a step holding it needs no host sync.
        """
        dtype = torch.promote_types(emissions.dtype, torch.float32)
        emissions = emissions.to(dtype)
        mask = mask.bool()
        B, W, C = emissions.shape
        trans, start, end = (x.to(dtype) for x in self.scores())
        if W == 0:
            return emissions.sum() * 0.0
        tags = tags.masked_fill(~mask, 0)
        # score of the gold path, vectorised over positions
        emit = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)  # [B, W]
        gold = start.index_select(0, tags[:, 0]) + torch.where(mask, emit, 0.0).sum(dim=1)
        if W > 1:
            pair_ids = (tags[:, :-1] * C + tags[:, 1:]).flatten()  # [B * (W-1)]
            step = trans.flatten().index_select(0, pair_ids).view(B, W - 1)
            gold = gold + torch.where(mask[:, 1:], step, 0.0).sum(dim=1)
        last = (mask.sum(dim=1, keepdim=True) - 1).clamp(min=0)  # [B, 1]
        gold = gold + end.index_select(0, tags.gather(1, last).squeeze(1))
        log_z = log_partition(emissions, mask, trans, start, end)
        return torch.where(mask[:, 0], log_z - gold, 0.0).sum()

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Best valid IOB2 tag ids ``[B, W]`` (0 where ``mask`` is False); see :func:`viterbi_decode`.

        Args: ``emissions`` ``[B, W, C]`` float, ``mask`` ``[B, W]`` bool (a prefix of each row).
        Runs at prediction and evaluation (``TokenTagger.decode``), never in a training step; it is
        the same log-depth, sync-free scan all the same (max-plus, with backpointers).
        """
        trans, start, end = self.scores()
        return viterbi_decode(emissions, mask, trans, start, end)
