"""Linear-chain conditional random field over word-level tag scores, constrained to valid IOB2.

Reference: Lafferty, McCallum & Pereira (2001), "Conditional Random Fields", sec. 3; the BERT-CRF
tagger of Souza et al. (2019). Transitions that IOB2 forbids (``O -> I-X``, ``B-X -> I-Y``,
start ``-> I-X``) are fixed at a large negative score in training and decoding, so the model never
spends probability mass on invalid sequences and Viterbi only returns valid ones.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from bertkit.data.tagging import allowed_transitions
from bertkit.decoding.viterbi import viterbi_decode

FORBIDDEN = -1e4  # added to forbidden transitions; exp(-1e4) == 0 in float32


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
            emissions: ``[B, W, C]`` float, word-level tag scores.
            tags: ``[B, W]`` long, gold tag ids (any value where ``mask`` is False).
            mask: ``[B, W]`` bool, True on real words, a prefix of each row; rows may be empty.

        Returns:
            scalar float: ``sum_b (log Z_b - score_b(gold))`` (empty rows contribute 0).
        """
        emissions = emissions.float()
        mask = mask.bool()
        B, W, C = emissions.shape
        trans, start, end = self.scores()
        tags = tags.masked_fill(~mask, 0)
        has = mask[:, 0]
        rows = torch.arange(B, device=emissions.device)
        # score of the gold path
        gold = start[tags[:, 0]] + emissions[rows, 0, tags[:, 0]]
        if W > 1:
            step = trans[tags[:, :-1], tags[:, 1:]] + emissions[:, 1:].gather(
                2, tags[:, 1:].unsqueeze(2)).squeeze(2)  # [B, W-1]
            gold = gold + (step * mask[:, 1:]).sum(dim=1)
        last = tags[rows, (mask.sum(dim=1) - 1).clamp(min=0)]
        gold = gold + end[last]
        # log partition function, forward algorithm (one loop over W, vectorised over B and C)
        alpha = start.unsqueeze(0) + emissions[:, 0]  # [B, C]
        for i in range(1, W):
            nxt = torch.logsumexp(alpha.unsqueeze(2) + trans.unsqueeze(0), dim=1) + emissions[:, i]
            alpha = torch.where(mask[:, i].unsqueeze(1), nxt, alpha)
        log_z = torch.logsumexp(alpha + end.unsqueeze(0), dim=1)
        return ((log_z - gold) * has).sum()

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Best valid IOB2 tag ids ``[B, W]`` (0 where ``mask`` is False); see :func:`viterbi_decode`."""
        trans, start, end = self.scores()
        return viterbi_decode(emissions, mask, trans, start, end)
