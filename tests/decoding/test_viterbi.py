import itertools

import torch

from bertkit.decoding.viterbi import viterbi_decode
from bertkit.heads.crf import LinearChainCRF

LABELS = ["B-X", "B-Y", "I-X", "I-Y", "O"]


def path_score(em, trans, start, end, path):
    s = start[path[0]] + em[0, path[0]] + end[path[-1]]
    for i in range(1, len(path)):
        s = s + trans[path[i - 1], path[i]] + em[i, path[i]]
    return s


def brute_best(em, trans, start, end):
    C = em.shape[1]
    return max(itertools.product(range(C), repeat=em.shape[0]),
               key=lambda p: float(path_score(em, trans, start, end, p)))


def test_viterbi_matches_brute_force_with_padding():
    torch.manual_seed(0)
    for W in (1, 3, 4, 5):
        em = torch.randn(2, 6, 5)
        trans, start, end = torch.randn(5, 5), torch.randn(5), torch.randn(5)
        mask = torch.zeros(2, 6, dtype=torch.bool)
        mask[0, :W] = True
        mask[1, :6] = True
        out = viterbi_decode(em, mask, trans, start, end)
        assert tuple(out[0, :W].tolist()) == brute_best(em[0, :W], trans, start, end)
        assert out[0, W:].eq(0).all()


def is_valid_iob2(tags):
    prev = "O"
    for t in tags:
        if t.startswith("I-") and prev[2:] != t[2:]:
            return False
        prev = t
    return True


def test_crf_decodes_only_valid_iob2():
    torch.manual_seed(1)
    crf = LinearChainCRF(LABELS)
    with torch.no_grad():
        crf.transitions.normal_()
    em = torch.randn(64, 7, 5) * 3
    em[:, :, LABELS.index("I-Y")] += 4  # push hard towards invalid I- tags
    mask = torch.ones(64, 7, dtype=torch.bool)
    out = crf.decode(em, mask)
    assert all(is_valid_iob2([LABELS[i] for i in row]) for row in out.tolist())


def test_crf_nll_matches_brute_force_partition():
    torch.manual_seed(2)
    crf = LinearChainCRF(LABELS)
    with torch.no_grad():
        for p in (crf.transitions, crf.start_transitions, crf.end_transitions):
            p.normal_()
    W = 4
    em = torch.randn(1, W, 5)
    gold = torch.tensor([[0, 2, 4, 1]])
    trans, start, end = crf.scores()
    scores = torch.stack([path_score(em[0], trans, start, end, p)
                          for p in itertools.product(range(5), repeat=W)])
    expected = torch.logsumexp(scores, 0) - path_score(em[0], trans, start, end, gold[0].tolist())
    nll = crf(em, gold, torch.ones(1, W, dtype=torch.bool))
    assert torch.allclose(nll, expected, atol=1e-4)
    # padding positions change nothing
    em_pad = torch.cat([em, torch.randn(1, 2, 5)], 1)
    mask = torch.tensor([[True] * W + [False] * 2])
    assert torch.allclose(crf(em_pad, torch.cat([gold, torch.zeros(1, 2, dtype=torch.long)], 1), mask),
                          expected, atol=1e-4)


def _random_rows(seed, B, W, C):
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(B, W, C, generator=g, dtype=torch.float64) * 2
    trans, start, end = (torch.randn(*s, generator=g, dtype=torch.float64)
                         for s in ((C, C), (C,), (C,)))
    lengths = torch.randint(0, W + 1, (B,), generator=g)
    lengths[0] = W
    return em, torch.arange(W).unsqueeze(0) < lengths.unsqueeze(1), trans, start, end


def test_scan_viterbi_equals_brute_force_on_all_small_shapes():
    """Every width 1-7 (odd and even edge counts at each level: the scan pads an odd level with
    an identity) with 3 tags, 1-5 with 5 tags, rows of every length including empty ones."""
    for W, C in [(w, 3) for w in range(1, 8)] + [(w, 5) for w in range(1, 6)]:
        em, mask, trans, start, end = _random_rows(10 * W + C, 8, W, C)
        out = viterbi_decode(em, mask, trans, start, end)
        assert out.shape == (8, W) and out.dtype == torch.long
        for b in range(8):
            n = int(mask[b].sum())
            assert out[b, n:].eq(0).all()
            if n:
                assert tuple(out[b, :n].tolist()) == brute_best(em[b, :n], trans, start, end)


def test_scan_viterbi_path_reaches_the_dynamic_programme_best_score_at_long_widths():
    """Up to W = 128, the decoded path's score equals the best score of the sequential max-plus
    recursion (Viterbi, 1967) computed here one position at a time."""
    em, mask, trans, start, end = _random_rows(3, 16, 128, 5)
    out = viterbi_decode(em, mask, trans, start, end)
    for b in range(16):
        n = int(mask[b].sum())
        if n == 0:
            continue
        best = start + em[b, 0]
        for i in range(1, n):
            best = (best.unsqueeze(1) + trans).max(dim=0).values + em[b, i]
        expected = float((best + end).max())
        got = float(path_score(em[b], trans, start, end, out[b, :n].tolist()))
        assert abs(got - expected) < 1e-9
