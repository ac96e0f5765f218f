"""The biaffine head: scorer formulas, masking, loss and gradients, scalar mix."""

import torch

from bertkit.heads.biaffine import Biaffine, BiaffineHead, ScalarMix


def test_biaffine_matches_the_explicit_formula():
    torch.manual_seed(0)
    b = Biaffine(3, 2, bias_x=True, bias_y=False)
    torch.nn.init.normal_(b.weight)
    x, y = torch.randn(1, 4, 3), torch.randn(1, 5, 3)
    s = b(x, y)
    assert s.shape == (1, 2, 4, 5)
    xa = torch.cat([x[0, 1], torch.ones(1)])
    assert torch.allclose(s[0, 1, 1, 2], xa @ b.weight[1] @ y[0, 2], atol=1e-5)
    p = Biaffine(3, 2)
    torch.nn.init.normal_(p.weight)
    pair = p.pairwise(x, x)
    assert torch.allclose(pair[0, 3], p(x, x)[0, :, 3, 3], atol=1e-5)


def test_head_masks_padding_and_self_loops_and_learns():
    torch.manual_seed(0)
    head = BiaffineHead(8, n_rels=3, arc_mlp=16, rel_mlp=8, dropout=0.0)
    words = torch.randn(2, 4, 8)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    s = head.arc_scores(words, mask)
    assert s.shape == (2, 4, 4)
    assert torch.isinf(s[1, 1, 2]) and torch.isinf(s[0, 2, 2]) and torch.isfinite(s[0, 1, 0])
    heads = torch.tensor([[0, 2, 0, 2], [0, 0, 0, 0]])
    rels = torch.tensor([[0, 1, 2, 0], [0, 2, 0, 0]])
    word_mask = mask.clone()
    word_mask[:, 0] = False
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    first = None
    for _ in range(30):
        loss, _ = head.loss(words, mask, heads, rels, word_mask)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1 * first
    assert head.arc_scores(words, mask)[0, 1].argmax().item() == 2
    assert head.rel_scores(words, heads)[0, 2].argmax().item() == 2


def test_scalar_mix_starts_as_the_layer_mean():
    mix = ScalarMix(3)
    layers = [torch.full((1, 2, 4), float(v)) for v in (1, 2, 6)]
    assert torch.allclose(mix(layers), torch.full((1, 2, 4), 3.0))


def test_parser_loss_over_every_row_equals_the_masked_selection():
    """The loss ignores non-words instead of selecting words (no boolean indexing in the
    step): same value and gradients as cross-entropy over the selected rows, none NaN."""
    import torch.nn.functional as F

    from bertkit.heads.biaffine import BiaffineHead

    torch.manual_seed(0)
    head = BiaffineHead(16, 5).eval()  # no dropout: two passes alike
    words = torch.randn(2, 6, 16, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], dtype=torch.bool)
    word_mask = mask.clone()
    word_mask[:, 0] = False  # the root is no dependent
    heads = torch.tensor([[0, 0, 1, 1, 2, 4], [0, 2, 0, 0, 0, 0]])
    rels = torch.randint(5, (2, 6))
    loss, s_arc = head.loss(words, mask, heads, rels, word_mask)
    loss.backward()
    got = words.grad.clone()
    words.grad = None
    s_rel = head.rel_scores(words, heads)
    ref = (F.cross_entropy(head.arc_scores(words, mask)[word_mask], heads[word_mask])
           + F.cross_entropy(s_rel[word_mask], rels[word_mask]))
    ref.backward()
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(got, words.grad)
    assert torch.isfinite(got).all()
