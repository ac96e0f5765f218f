import torch

from bertkit.heads.sbo import SpanBoundaryHead


def _boundaries(B, T, spans):
    """``[B, T, 2]``: (s-1, e+1) over each span (row, s, e), -1 elsewhere."""
    b = torch.full((B, T, 2), -1)
    for row, s, e in spans:
        b[row, s:e + 1] = torch.tensor([s - 1, e + 1])
    return b


def test_sbo_shapes_gradients_and_tied_output():
    torch.manual_seed(0)
    B, T, H, V = 2, 12, 16, 50
    hidden = torch.randn(B, T, H, requires_grad=True)
    emb = torch.nn.Parameter(torch.randn(V, H))
    head = SpanBoundaryHead(H, V, position_size=200, max_targets=15)
    assert head.position.weight.shape == (15, 200) and head.dense1.in_features == 2 * H + 200
    logits, picked = head(hidden, _boundaries(B, T, [(0, 3, 4), (1, 7, 8)]), emb)
    assert logits.shape == (4, V) and picked.sum() == 4
    assert picked[0, 3:5].all() and picked[1, 7:9].all()
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor([1, 2, 3, 4]))
    loss.backward()
    # only the boundary states get gradient, never the targets' own positions
    touched = hidden.grad.abs().sum(-1) > 0
    expected = torch.zeros(B, T, dtype=torch.bool)
    expected[0, [2, 5]] = True
    expected[1, [6, 9]] = True
    assert torch.equal(touched, expected)
    assert emb.grad is not None and head.bias.grad is not None
    assert all(p.grad is not None for p in head.parameters())


def test_sbo_same_boundaries_differ_only_by_position():
    torch.manual_seed(1)
    head = SpanBoundaryHead(8, 20, position_size=4).eval()
    hidden = torch.randn(1, 6, 8)
    emb = torch.randn(20, 8)
    b = _boundaries(1, 6, [(0, 2, 3)])
    a, _ = head(hidden, b, emb)
    assert not torch.allclose(a[0], a[1])  # same boundaries, positions 0 and 1 in the span
    other = hidden.clone()
    other[0, 2:4] = torch.randn(2, 8)
    c, _ = head(other, b, emb)
    assert torch.allclose(a, c)  # the targets' own states are never an input
