"""BERT's token masking (Devlin et al., 2019, sec. 3.1 and appendix A.1).

Each row gets exactly ``max(1, round(p * n))`` of its ``n`` real tokens chosen uniformly at
random (as BERT's ``create_pretraining_data.py`` does), so the budget is never exceeded; each
chosen token becomes ``[MASK]`` 80% of the time, a random non-special token 10%, itself 10%.
"""

from __future__ import annotations

import torch

from bertkit.masking.base import MaskedBatch, Masker, budget, real_tokens, replace


def choose_tokens(real: torch.Tensor, k: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``[B, T]`` bool: exactly ``k[b]`` positions of row b, uniformly among its ``real`` ones.

    Vectorised: random scores (2 on non-real positions), one sort, threshold at the k-th value.
    """
    scores = torch.rand(real.shape, generator=generator)
    scores = torch.where(real, scores, torch.full_like(scores, 2.0))
    ranks = scores.argsort(dim=1).argsort(dim=1)
    return (ranks < k[:, None]) & real


class TokenMasker(Masker):
    """BERT token masking; see the module docstring. ``__call__`` returns no SBO targets."""

    name = "token"

    def __call__(self, input_ids: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        real = real_tokens(input_ids, self.vocab)
        chosen = choose_tokens(real, budget(real, self.mask_prob, "round"), generator)
        u = torch.rand(input_ids.shape, generator=generator)
        inputs, labels = replace(input_ids, chosen, u, self.vocab, self.mask_replace_prob,
                                 self.random_replace_prob, generator)
        return MaskedBatch(inputs, labels)
