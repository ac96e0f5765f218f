"""SpanBERT's span-boundary objective head (Joshi et al., 2020, sec. 3.2).

Each token x_i of a masked span (x_s..x_e) is predicted from the encoder outputs at the span's
external boundary tokens, x_{s-1} and x_{e+1}, and a learned embedding of its relative position
p_{i-s+1}::

    h0 = [x_{s-1}; x_{e+1}; p_{i-s+1}]
    h1 = LayerNorm(GeLU(W1 h0))
    y_i = LayerNorm(GeLU(W2 h1))
    logits_i = E y_i + b        (E: the input word embeddings, tied; b: the head's own bias)

The relative-position embedding has 200 dimensions in the reference implementation, and at most
:data:`MAX_TARGETS` (15) targets per span are predicted: the first 15 tokens of a longer span
(the reference's ``max_pair_targets``). This head is the one place that limit is applied.

The targets arrive in one representation, per position: ``boundaries [B, T, 2]`` holding
(s-1, e+1) at each masked token of a span s..e with real boundary tokens and -1 elsewhere
(:attr:`bertkit.masking.MaskedBatch.sbo_boundaries`), indexed by row first like every batch
tensor, so a process's slice of a batch keeps exactly its own targets.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

MAX_TARGETS = 15  # SBO targets per span (SpanBERT's max_pair_targets); set here only


class SpanBoundaryHead(nn.Module):
    """The SBO head.

    Args:
        hidden_size: H, the encoder width.
        vocab_size: V, the output vocabulary (the tied embedding matrix is ``[V, H]``).
        position_size: width of the relative-position embedding (200 in SpanBERT).
        max_targets: positions per span that can be predicted (:data:`MAX_TARGETS`).
        layer_norm_eps: epsilon of the two layer normalisations.
    """

    def __init__(self, hidden_size: int, vocab_size: int, position_size: int = 200,
                 max_targets: int = MAX_TARGETS, layer_norm_eps: float = 1e-12) -> None:
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

    def targets(self, boundaries: torch.Tensor) -> torch.Tensor:
        """``[B, T]`` bool: the positions this head predicts: masked span tokens with real
        boundaries (``boundaries[..., 0] >= 0``) among the first ``max_targets`` of their span."""
        left = boundaries[..., 0]
        pos = torch.arange(boundaries.shape[1], device=boundaries.device)
        return (left >= 0) & (pos - left - 1 < self.max_targets)

    def forward(self, hidden: torch.Tensor, boundaries: torch.Tensor,
                output_weight: torch.Tensor, positions: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits of the SBO targets.

        Args:
            hidden: ``[B, T, H]`` last-layer encoder outputs.
            boundaries: ``[B, T, 2]`` long, (s-1, e+1) at span tokens, -1 elsewhere (see the
                module docstring).
            output_weight: ``[V, H]`` the (tied) input word embeddings.
            positions: ``[B, K]`` long, the masked positions of each row at a fixed count K
                (:func:`bertkit.masking.static_positions`): the training step's form, with
                static shapes and no host sync. None: every target, selected by boolean
                indexing (a data-dependent shape; for evaluation and tests).

        Returns:
            with ``positions``: ``logits [B * K, V]`` at every given position and ``[B, K]``
            bool, which of them are SBO targets (the loss ignores the others); without:
            ``logits [M, V]`` for the M positions of :meth:`targets`, row-major, and that
            ``[B, T]`` bool selection (the loss compares with ``labels[selection]``).
        """
        if positions is not None:
            return self._at(hidden, boundaries, output_weight, positions)
        picked = self.targets(boundaries)
        row, pos = torch.nonzero(picked, as_tuple=True)  # [M] each
        left, right = boundaries[row, pos, 0], boundaries[row, pos, 1]
        h = torch.cat([hidden[row, left], hidden[row, right], self.position(pos - left - 1)], dim=-1)
        h = self.norm1(F.gelu(self.dense1(h)))  # [M, H]
        h = self.norm2(F.gelu(self.dense2(h)))
        return F.linear(h, output_weight, self.bias), picked

    def _at(self, hidden: torch.Tensor, boundaries: torch.Tensor, output_weight: torch.Tensor,
            positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` at fixed ``[B, K]`` positions: gathers only, no host sync."""
        H = hidden.shape[-1]
        bounds = boundaries.gather(1, positions.unsqueeze(-1).expand(-1, -1, 2))  # [B, K, 2]
        left, right = bounds[..., 0], bounds[..., 1]
        offset = positions - left - 1  # the target's place in its span, from 0
        valid = (left >= 0) & (offset < self.max_targets)  # [B, K]
        left, right = left.clamp(min=0), right.clamp(min=0)  # not targets: any real row index
        offset = torch.where(valid, offset, torch.zeros_like(offset))

        def at(index: torch.Tensor) -> torch.Tensor:  # [B, K] -> [B, K, H]
            return hidden.gather(1, index.unsqueeze(-1).expand(-1, -1, H))

        h = torch.cat([at(left), at(right), self.position(offset)], dim=-1)  # [B, K, 2H + P]
        h = self.norm1(F.gelu(self.dense1(h)))  # [B, K, H]
        h = self.norm2(F.gelu(self.dense2(h)))
        return F.linear(h.flatten(0, 1), output_weight, self.bias), valid
