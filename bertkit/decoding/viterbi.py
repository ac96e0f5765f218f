"""Viterbi decoding of a linear-chain model as a parallel max-plus scan, batched over rows and tags.

The score of a tag path (Lafferty et al., 2001, sec. 3, the linear-chain CRF) is
``score(y) = start[y_1] + sum_i emit[i, y_i] + sum_i trans[y_{i-1}, y_i] + end[y_W]``. Written as a
product of ``W-1`` edge matrices ``M_i[y, y'] = trans[y, y'] + emit[i+1, y']`` in a semiring (here
max-plus; the CRF's log-partition uses the log semiring on the same matrices,
:mod:`bertkit.heads.crf`), the product is associative, so it is reduced as a balanced tree: log2(W)
levels of batched ``C x C`` products instead of W-1 sequential steps (Rush, 2020, "Torch-Struct",
sec. "Optimizations", parallel scan inference, fig. 4, and ``linearchain.py``'s ``_dp_scan``;
Sarkka & Garcia-Fernandez, 2021, "Temporal Parallelization of Bayesian Smoothers", sec. III, for
the associative formulation; Hassan, Sarkka & Garcia-Fernandez, 2021, "Temporal Parallelization of
Inference in Hidden Markov Models", for the parallel Viterbi). Viterbi (1967) backpointers become
one argmax per tree node (the best tag at the node's midpoint for each pair of end tags), read
back top-down in another log2(W) levels.

Forbidden transitions carry ``-inf``-like scores so the best path is always a valid IOB2 sequence.
Every shape depends only on the padded width ``W``: no host reads, no data-dependent shapes, so
the decoder runs without a host sync and compiles to one graph.
"""

from __future__ import annotations

import torch

SEMIRING_ZERO = -1e9  # off-diagonal of the identity edge (masked or padded steps): never chosen


def chain_edges(emissions: torch.Tensor, mask: torch.Tensor,
                transitions: torch.Tensor) -> torch.Tensor:
    """Edge score matrices of a linear chain, masked steps as the semiring identity.

    Args:
        emissions: ``[B, W, C]`` float, per-position tag scores, ``W >= 2``.
        mask: ``[B, W]`` bool, True on real positions (a prefix of each row).
        transitions: ``[C, C]`` float, ``transitions[i, j]`` = score of tag j following tag i.

    Returns:
        ``[B, W-1, C, C]`` float: edge ``i`` (between positions ``i`` and ``i+1``) is
        ``transitions + emissions[:, i+1]`` (broadcast over the previous tag) where
        ``mask[:, i+1]``, else the identity of :func:`semiring_identity`, which carries the
        last real tag on unchanged (as torch-struct's ``_dp_scan`` masks steps with the
        semiring's one).
    """
    identity = semiring_identity(emissions.shape[2], emissions)
    edges = transitions.to(emissions.dtype)[None, None] + emissions[:, 1:].unsqueeze(2)
    return torch.where(mask[:, 1:, None, None], edges, identity)


def semiring_identity(C: int, like: torch.Tensor) -> torch.Tensor:
    """``[C, C]``: 0 on the diagonal, ``SEMIRING_ZERO`` elsewhere (dtype and device of ``like``),
    the identity of the max-plus and (to float precision) the log semiring."""
    eye = torch.eye(C, dtype=torch.bool, device=like.device)
    return torch.zeros(C, C, dtype=like.dtype, device=like.device).masked_fill(~eye, SEMIRING_ZERO)


def pairs(level: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One level of the tree: ``[B, n, C, C]`` -> its left and right operands, each
    ``[B, ceil(n/2), C, C]`` (an odd ``n`` gets an identity on the right end). Padding each level
    to even, not the whole chain to a power of two, gives the same depth, ``ceil(log2(n))``,
    with about ``n`` products instead of up to ``2n``."""
    B, n, C, _ = level.shape
    if n % 2:
        level = torch.cat([level, semiring_identity(C, level).expand(B, 1, C, C)], dim=1)
    return level[:, 0::2], level[:, 1::2]


def viterbi_decode(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> torch.Tensor:
    """Highest-scoring tag sequence of each batch row.

    Args:
        emissions: ``[B, W, C]`` float, per-position tag scores (e.g. log-probabilities).
        mask: ``[B, W]`` bool, True on real positions; each row's real positions form a prefix.
        transitions: ``[C, C]`` float, ``transitions[i, j]`` = score of tag j following tag i.
        start: ``[C]`` float, score of starting with each tag.
        end: ``[C]`` float, score of ending with each tag.

    Returns:
        ``[B, W]`` long, the best tags; positions where ``mask`` is False hold 0. Of tied best
        paths one is returned (a consistent path, whatever the ties).

    Complexity: O(W C^3) work per row (a max-plus ``C x C`` product per tree node; the sequential
    recursion is O(W C^2)) in ``2 ceil(log2(W-1))`` batched steps; memory O(B W C^2) backpointers
    plus one level's ``[B, W/2, C, C, C]`` scores. See the module docstring for the method.
    """
    B, W, C = emissions.shape
    if W == 0:
        return torch.zeros(B, 0, dtype=torch.long, device=emissions.device)
    dtype = torch.promote_types(emissions.dtype, torch.float32)  # bf16/fp16 scores: fp32
    emissions = emissions.to(dtype)
    transitions, start, end = transitions.to(dtype), start.to(dtype), end.to(dtype)
    mask = mask.bool()
    first = start.unsqueeze(0) + emissions[:, 0]  # [B, C]
    if W == 1:
        best = (first + end.unsqueeze(0)).argmax(dim=1, keepdim=True)  # [B, 1]
        return best.masked_fill(~mask, 0)
    level = chain_edges(emissions, mask, transitions)  # [B, W-1, C, C]
    pointers = []  # per level: (blocks below, [B, m, C, C] best midpoint tag given the end tags)
    while level.shape[1] > 1:
        below = level.shape[1]
        left, right = pairs(level)
        level, mid = (left.unsqueeze(4) + right.unsqueeze(2)).max(dim=3)  # over [B, m, C, C_mid, C]
        pointers.append((below, mid))
    total = first.unsqueeze(2) + level[:, 0] + end.unsqueeze(0).unsqueeze(1)  # [B, C_first, C_last]
    flat = total.flatten(1).argmax(dim=1)  # [B]
    tags = torch.stack([flat // C, flat % C], dim=1)  # tags at the first and last node: [B, 2]
    for below, mid in reversed(pointers):
        # each block's end tags -> its midpoint tag, interleaved: [B, m+1] -> [B, below+1]
        m = mid.shape[1]
        pick = (tags[:, :-1] * C + tags[:, 1:]).unsqueeze(2)  # [B, m, 1]
        middle = mid.flatten(2).gather(2, pick).squeeze(2)  # [B, m]
        tags = torch.cat([torch.stack([tags[:, :-1], middle], dim=2).reshape(B, 2 * m),
                          tags[:, -1:]], dim=1)[:, :below + 1]
    return tags.masked_fill(~mask, 0)
