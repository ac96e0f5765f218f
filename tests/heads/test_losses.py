"""The blocked cross-entropy equals the plain one in value and gradient, without an fp32 copy."""

import pytest
import torch
import torch.nn.functional as F

from bertkit.heads.losses import chunked_cross_entropy


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("block", [3, 7, 64])
def test_chunked_cross_entropy_equals_the_plain_one(dtype, block):
    torch.manual_seed(0)
    logits = (3 * torch.randn(23, 50)).to(dtype).requires_grad_()
    target = torch.randint(50, (23,))
    target[[0, 5, 22]] = -100  # ignored rows, one of them last
    loss = chunked_cross_entropy(logits, target, block=block)
    loss.backward()
    got = logits.grad.clone()
    logits.grad = None
    ref = F.cross_entropy(logits.float(), target, ignore_index=-100, reduction="sum")
    ref.backward()
    assert got.dtype == dtype
    torch.testing.assert_close(loss, ref.to(loss.dtype), rtol=1e-5, atol=1e-4)
    tol = {torch.bfloat16: 1e-2, torch.float32: 1e-5, torch.float64: 1e-7}[dtype]
    torch.testing.assert_close(got, logits.grad, rtol=tol, atol=tol)
    assert (got[[0, 5, 22]] == 0).all()


def test_no_row_to_predict_gives_zero_and_zero_gradient():
    logits = torch.randn(4, 9, requires_grad=True)
    loss = chunked_cross_entropy(logits, torch.full((4,), -100))
    loss.backward()
    assert float(loss.detach()) == 0.0 and (logits.grad == 0).all()
