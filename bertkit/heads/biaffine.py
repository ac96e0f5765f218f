"""The Dozat & Manning (2017) biaffine dependency parser head.

Reference: Timothy Dozat and Christopher D. Manning, "Deep Biaffine Attention for Neural
Dependency Parsing", ICLR 2017, section 2 (equations 2-6 and the label classifier of section 2.2),
with the hyper-parameters of their table 2: MLP sizes 500 (arcs) / 100 (labels), LeakyReLU(0.1),
dropout 0.33. The encoder here is a pretrained transformer instead of a BiLSTM (as in SciBERT and
SuPar); words are represented by their first subword (default) or the mean of their subwords,
optionally from a learned scalar mix of all hidden layers (Peters et al. 2018, eq. 1).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    """Linear -> LeakyReLU(0.1) -> dropout: ``[..., n_in] -> [..., n_out]``."""

    def __init__(self, n_in: int, n_out: int, dropout: float = 0.33) -> None:
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.dropout = nn.Dropout(dropout)
        nn.init.orthogonal_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(F.leaky_relu(self.linear(x), 0.1))


class Biaffine(nn.Module):
    """``s[b, o, x, y] = [x_bx; 1]^T W_o [y_by; 1]`` (bias terms optional per side).

    With ``bias_x`` only and ``n_out = 1`` this is the arc scorer of Dozat & Manning eq. 2-3
    (bilinear term plus a head prior ``H u``); with both biases and ``n_out = R`` it is their
    label classifier (bilinear + linear + bias, eq. 6).

    Args:
        n_in: input size; n_out: number of score maps.
    Shapes:
        ``x`` ``[B, N, n_in]``, ``y`` ``[B, M, n_in]`` -> ``[B, n_out, N, M]``.
    """

    def __init__(self, n_in: int, n_out: int = 1, bias_x: bool = True, bias_y: bool = True) -> None:
        super().__init__()
        self.n_out, self.bias_x, self.bias_y = n_out, bias_x, bias_y
        self.weight = nn.Parameter(torch.zeros(n_out, n_in + bias_x, n_in + bias_y))

    @staticmethod
    def _aug(t: torch.Tensor, on: bool) -> torch.Tensor:
        return torch.cat([t, torch.ones_like(t[..., :1])], -1) if on else t

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x, y = self._aug(x, self.bias_x), self._aug(y, self.bias_y)
        return torch.einsum("bxi,oij,byj->boxy", x, self.weight, y)

    def pairwise(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Scores of aligned pairs only: ``x``, ``y`` ``[B, N, n_in]`` -> ``[B, N, n_out]``."""
        x, y = self._aug(x, self.bias_x), self._aug(y, self.bias_y)
        return torch.einsum("bni,oij,bnj->bno", x, self.weight, y)


class ScalarMix(nn.Module):
    """``gamma * sum_l softmax(w)_l h_l`` over ``L`` layers (Peters et al. 2018, eq. 1).

    Shapes: a sequence of ``L`` tensors ``[B, T, H]`` -> ``[B, T, H]``.
    """

    def __init__(self, n_layers: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers) -> torch.Tensor:
        w = self.weights.softmax(0)
        return self.gamma * sum(w[k] * h for k, h in enumerate(layers))


class BiaffineHead(nn.Module):
    """Arc and label scoring over word vectors (index 0 of each sentence is the root).

    Args:
        hidden: encoder width; n_rels: number of relations R; arc_mlp / rel_mlp: MLP sizes;
        dropout: MLP dropout; n_layers: >0 to add a :class:`ScalarMix` over that many layers.
    """

    def __init__(self, hidden: int, n_rels: int, arc_mlp: int = 500, rel_mlp: int = 100,
                 dropout: float = 0.33, n_layers: int = 0) -> None:
        super().__init__()
        self.mix = ScalarMix(n_layers) if n_layers else None
        self.arc_d, self.arc_h = MLP(hidden, arc_mlp, dropout), MLP(hidden, arc_mlp, dropout)
        self.rel_d, self.rel_h = MLP(hidden, rel_mlp, dropout), MLP(hidden, rel_mlp, dropout)
        self.arc = Biaffine(arc_mlp, 1, bias_x=True, bias_y=False)
        self.rel = Biaffine(rel_mlp, n_rels, bias_x=True, bias_y=True)

    def arc_scores(self, words: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``words`` ``[B, N+1, H]``, ``mask`` ``[B, N+1]`` (True at the root and real words) ->
        ``s_arc`` ``[B, N+1 (dependent), N+1 (head)]``; padded heads and self-loops get -inf."""
        s = self.arc(self.arc_d(words), self.arc_h(words)).squeeze(1).float()
        N1 = s.shape[1]
        bad = ~mask[:, None, :] | torch.eye(N1, dtype=torch.bool, device=s.device)[None]
        return s.masked_fill(bad, float("-inf"))

    def rel_scores(self, words: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """Label scores of each word with the given head: ``heads`` ``[B, N+1]`` (long, 0..N) ->
        ``[B, N+1, R]`` (row 0, the root, is meaningless)."""
        dep = self.rel_d(words)
        head = self.rel_h(words)
        head = head.gather(1, heads.clamp(min=0).unsqueeze(-1).expand(-1, -1, head.shape[-1]))
        return self.rel.pairwise(dep, head).float()

    def loss(self, words: torch.Tensor, mask: torch.Tensor, heads: torch.Tensor, rels: torch.Tensor,
             word_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-entropy of gold heads over all candidate heads plus cross-entropy of gold labels
        given gold heads (Dozat & Manning section 2.2), averaged over the words in ``word_mask``.

        Returns:
            (total loss, arc scores ``[B, N+1, N+1]``).
        """
        s_arc = self.arc_scores(words, mask)
        s_rel = self.rel_scores(words, heads)
        # every row, non-words ignored (no boolean indexing: no host sync, a static shape);
        # their arc rows zeroed, as a row of -inf would give NaN gradients through log-softmax
        ignore = ~word_mask
        arc_in = s_arc.masked_fill(ignore.unsqueeze(-1), 0.0).flatten(0, 1)  # [B (N+1), N+1]
        arc_loss = F.cross_entropy(arc_in, heads.masked_fill(ignore, -100).flatten(),
                                   ignore_index=-100)
        rel_loss = F.cross_entropy(s_rel.flatten(0, 1), rels.masked_fill(ignore, -100).flatten(),
                                   ignore_index=-100)
        return arc_loss + rel_loss, s_arc
