"""Cross-entropy over a large vocabulary without an fp32 copy of the logits.

Under bf16 autocast the MLM and SBO heads give ``[N, V]`` bf16 logits (V = 30,522 for BERT's
vocabulary); ``F.cross_entropy(logits.float(), ...)`` first materialises an fp32 copy ``[N, V]``
and keeps the fp32 log-softmax for the backward pass: twice the logits' memory in fp32 for every
head. :func:`chunked_cross_entropy` computes the same loss a block of rows at a time in fp32
(each block's fp32 values live only inside the block), keeps only the ``[N]`` log-partition for
the backward pass, and writes the gradient ``softmax - onehot`` straight into the logits' dtype.
Memory traffic and peak memory in fp32 are one block, not ``[N, V]``; the block count depends only
on N, so shapes stay static (a compiled step unrolls it; inductor would fuse the plain form too).

The loss is the usual softmax cross-entropy (e.g. Devlin et al., 2019, sec. 3.1 for MLM); the
blocked form is what fused kernels such as Liger's ``FusedLinearCrossEntropy`` do on the GPU.
"""

from __future__ import annotations

import torch

BLOCK_ROWS = 2048  # rows of logits per fp32 block: 2,048 x 30,522 x 4 bytes = 250 MB at most


class _ChunkedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, target: torch.Tensor, ignore_index: int,
                block: int) -> torch.Tensor:
        N = logits.shape[0]
        ct = torch.promote_types(logits.dtype, torch.float32)  # fp32, or fp64 for fp64 logits
        keep = target != ignore_index
        safe = torch.where(keep, target, torch.zeros_like(target))
        lse = torch.empty(N, dtype=ct, device=logits.device)
        picked = torch.empty(N, dtype=ct, device=logits.device)
        for start in range(0, N, block):
            rows = logits[start:start + block].to(ct)  # [b, V] fp32, this block only
            lse[start:start + block] = torch.logsumexp(rows, dim=-1)
            picked[start:start + block] = rows.gather(1, safe[start:start + block, None])[:, 0]
        ctx.save_for_backward(logits, safe, keep, lse)
        ctx.block = block
        return torch.where(keep, lse - picked, torch.zeros_like(lse)).sum()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        logits, safe, keep, lse = ctx.saved_tensors
        out = torch.empty_like(logits)
        scale = grad.to(lse.dtype) * keep.to(lse.dtype)  # [N]: 0 at ignored rows
        for start in range(0, logits.shape[0], ctx.block):
            end = start + ctx.block
            p = torch.exp(logits[start:end].to(lse.dtype) - lse[start:end, None])  # [b, V]
            p.scatter_add_(1, safe[start:end, None], -torch.ones_like(p[:, :1]))
            out[start:end] = (p * scale[start:end, None]).to(logits.dtype)
        return out, None, None, None


def chunked_cross_entropy(logits: torch.Tensor, target: torch.Tensor, ignore_index: int = -100,
                          block: int = BLOCK_ROWS) -> torch.Tensor:
    """Sum over rows of ``-log softmax(logits)[target]``, rows with ``target == ignore_index``
    left out: ``F.cross_entropy(logits.float(), target, ignore_index=..., reduction="sum")``
    without the fp32 ``[N, V]`` copy (see the module docstring).

    Args:
        logits: ``[N, V]`` float (bf16, fp16 or fp32).
        target: ``[N]`` long class ids, ``ignore_index`` where nothing is predicted.
        ignore_index: the target value of rows to leave out.
        block: rows computed in fp32 at a time.

    Returns:
        a 0-dim tensor, fp32 (fp64 for fp64 logits); its gradient has the logits' dtype.
    """
    return _ChunkedCrossEntropy.apply(logits, target, ignore_index, block)
