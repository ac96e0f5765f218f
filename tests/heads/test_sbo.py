import torch

from bertkit.heads.sbo import SpanBoundaryHead


def test_sbo_shapes_gradients_and_tied_output():
    torch.manual_seed(0)
    B, T, H, V = 2, 12, 16, 50
    hidden = torch.randn(B, T, H, requires_grad=True)
    emb = torch.nn.Parameter(torch.randn(V, H))
    head = SpanBoundaryHead(H, V, position_size=200, max_targets=15)
    assert head.position.weight.shape == (15, 200) and head.dense1.in_features == 2 * H + 200
    targets = torch.tensor([[0, 3, 2, 5, 0], [0, 4, 2, 5, 1], [1, 8, 6, 9, 1]])
    logits = head(hidden, targets, emb)
    assert logits.shape == (3, V)
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor([1, 2, 3]))
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
    a = head(hidden, torch.tensor([[0, 2, 1, 4, 0], [0, 3, 1, 4, 1]]), emb)
    assert not torch.allclose(a[0], a[1])
    b = head(hidden, torch.tensor([[0, 2, 1, 4, 1]]), emb)
    assert torch.allclose(a[1], b[0])  # the target's own position is never an input
