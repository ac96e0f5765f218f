"""Viterbi decoding of a linear-chain model, batched and vectorised over tags.

Reference: Viterbi (1967); Lafferty et al. (2001), sec. 3, for the linear-chain CRF score
``score(y) = start[y_1] + sum_i emit[i, y_i] + sum_i trans[y_{i-1}, y_i] + end[y_W]``.
Forbidden transitions carry ``-inf``-like scores so the best path is always a valid IOB2 sequence.
"""

from __future__ import annotations

import torch


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
        ``[B, W]`` long, the best tags; positions where ``mask`` is False hold 0.

    Complexity: O(W C^2) per row, one loop over W (the recursion is sequential), vectorised over B, C.
    """
    B, W, C = emissions.shape
    if W == 0:
        return torch.zeros(B, 0, dtype=torch.long, device=emissions.device)
    emissions = emissions.float()
    transitions, start, end = transitions.float(), start.float(), end.float()
    mask = mask.bool()
    lengths = mask.sum(dim=1)  # [B]
    score = start.unsqueeze(0) + emissions[:, 0]  # [B, C]
    history = []
    for i in range(1, W):
        # [B, C_prev, 1] + [C_prev, C] -> [B, C_prev, C]; best previous tag for each current tag
        cand = score.unsqueeze(2) + transitions.unsqueeze(0)
        best, idx = cand.max(dim=1)  # [B, C]
        new = best + emissions[:, i]
        step = mask[:, i].unsqueeze(1)
        score = torch.where(step, new, score)
        history.append(idx)
    score = score + end.unsqueeze(0)
    last = score.argmax(dim=1)  # [B]
    out = torch.zeros(B, W, dtype=torch.long, device=emissions.device)
    rows = torch.arange(B, device=emissions.device)
    out[rows, (lengths - 1).clamp(min=0)] = last
    tag = last
    for i in range(W - 1, 0, -1):
        # at position i (inside the row's length) the back pointer gives the tag at i-1
        prev = history[i - 1][rows, tag]
        inside = i < lengths
        tag = torch.where(inside, prev, tag)
        out[:, i - 1] = torch.where(inside, tag, out[:, i - 1])
    return out.masked_fill(~mask, 0)
