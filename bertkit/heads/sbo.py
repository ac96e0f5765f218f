"""SpanBERT's span-boundary objective head (Joshi et al., 2020, sec. 3.2).

Each token x_i of a masked span (x_s..x_e) is predicted from the encoder outputs at the span's
external boundary tokens, x_{s-1} and x_{e+1}, and a learned embedding of its relative position
p_{i-s+1}::

    h0 = [x_{s-1}; x_{e+1}; p_{i-s+1}]
    h1 = LayerNorm(GeLU(W1 h0))
    y_i = LayerNorm(GeLU(W2 h1))
    logits_i = E y_i + b        (E: the input word embeddings, tied; b: the head's own bias)

The relative-position embedding has 200 dimensions in the reference implementation, and at most
15 targets per span are predicted (``max_targets``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SpanBoundaryHead(nn.Module):
    """The SBO head.

    Args:
        hidden_size: H, the encoder width.
        vocab_size: V, the output vocabulary (the tied embedding matrix is ``[V, H]``).
        position_size: width of the relative-position embedding (200 in SpanBERT).
        max_targets: positions per span that can be predicted (15).
        layer_norm_eps: epsilon of the two layer normalisations.
    """

    def __init__(self, hidden_size: int, vocab_size: int, position_size: int = 200,
                 max_targets: int = 15, layer_norm_eps: float = 1e-12) -> None:
        super().__init__()
        self.position = nn.Embedding(max_targets, position_size)
        self.dense1 = nn.Linear(2 * hidden_size + position_size, hidden_size)
        self.norm1 = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dense2 = nn.Linear(hidden_size, hidden_size)
        self.norm2 = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        self.max_targets = max_targets
        for lin in (self.dense1, self.dense2):
            nn.init.normal_(lin.weight, std=0.02)
            nn.init.zeros_(lin.bias)
        nn.init.normal_(self.position.weight, std=0.02)

    def forward(self, hidden: torch.Tensor, targets: torch.Tensor,
                output_weight: torch.Tensor) -> torch.Tensor:
        """Logits of the SBO targets.

        Args:
            hidden: ``[B, T, H]`` last-layer encoder outputs.
            targets: ``[M, 5]`` long rows (batch row, position, left boundary s-1, right
                boundary e+1, relative position from 0), as
                :func:`bertkit.masking.span.sbo_targets` builds them.
            output_weight: ``[V, H]`` the (tied) input word embeddings.

        Returns:
            ``[M, V]`` logits.
        """
        row, left, right, rel = targets[:, 0], targets[:, 2], targets[:, 3], targets[:, 4]
        h = torch.cat([hidden[row, left], hidden[row, right], self.position(rel)], dim=-1)
        h = self.norm1(F.gelu(self.dense1(h)))
        h = self.norm2(F.gelu(self.dense2(h)))
        return F.linear(h, output_weight, self.bias)
