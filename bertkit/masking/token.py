"""BERT's token masking (Devlin et al., 2019, sec. 3.1 and appendix A.1).

Each row gets exactly ``max(1, round(p * n))`` of its ``n`` real tokens chosen uniformly at
random (as BERT's ``create_pretraining_data.py`` does), so the budget is never exceeded; each
chosen token becomes ``[MASK]`` 80% of the time, a random non-special token 10%, itself 10%.
"""

from __future__ import annotations

import torch

import numpy as np

from bertkit.masking.base import (MaskedBatch, Masker, as_ids, budget, real_tokens, replace,
                                  replace_compiled, row_offsets)


def choose_tokens(real: torch.Tensor, k: list[int], generator: torch.Generator) -> torch.Tensor:
    """``[N]`` long flat indices (``N = k.sum()``): exactly ``k[b]`` positions of row b, drawn
    uniformly without replacement among its ``real`` ones.

    Vectorised, no full sort: uniform keys (2.0 on non-real positions, above every draw) and one
    partial ``topk`` for the ``max(k)`` smallest keys of every row (sorted only when the rows'
    budgets differ, to keep each row's first ``k[b]``).

    Args:
        real: ``[B, T]`` bool, the positions that may be chosen.
        k: B budgets, ``0 <= k[b] <= real[b].sum()``.
    """
    B, T = real.shape
    kmax = max(k, default=0)
    if kmax == 0:
        return torch.zeros(0, dtype=torch.long)
    keys = torch.rand((B, T), generator=generator).masked_fill_(~real, 2.0)
    same = min(k) == kmax
    idx = keys.topk(kmax, dim=1, largest=False, sorted=not same).indices  # [B, kmax]
    idx += row_offsets(B, T)
    if same:
        return idx.reshape(-1)
    return idx[torch.arange(kmax) < torch.tensor(k)[:, None]]


class TokenMasker(Masker):
    """BERT token masking; see the module docstring. ``__call__`` returns no SBO boundaries."""

    name = "token"

    def __call__(self, input_ids: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        real = real_tokens(input_ids, self.vocab)
        chosen = choose_tokens(real, budget(real, self.mask_prob, "round"), generator)
        u = torch.rand(chosen.shape, generator=generator)
        if self.jit:  # the same 80/10/10 by the compiled kernel
            inputs, labels = replace_compiled(as_ids(input_ids), np.ascontiguousarray(chosen.numpy()),
                                              u.numpy(), self.vocab, self.mask_replace_prob,
                                              self.random_replace_prob, generator)
            return MaskedBatch(inputs, labels)
        inputs, labels = replace(input_ids, chosen, u, self.vocab, self.mask_replace_prob,
                                 self.random_replace_prob, generator)
        return MaskedBatch(inputs, labels)
