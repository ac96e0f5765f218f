"""Statistical checks of the three strategies over 4,000 packed sequences, fixed seeds."""

import math

import pytest
import torch

from bertkit.masking import IGNORE, build_masker, real_tokens, span_length_distribution, word_starts
from bertkit.masking.span import span_runs
from bertkit.masking.wwm import choose_words


def run(name, vocab, batch, seed=0, **kw):
    masker = build_masker(name, vocab, **kw)
    g = torch.Generator().manual_seed(seed)
    outs = [masker(batch[i:i + 250], g) for i in range(0, len(batch), 250)]
    cat = lambda key: torch.cat([getattr(o, key) for o in outs])  # noqa: E731
    return masker, outs, cat("input_ids"), cat("labels")


@pytest.fixture(scope="module", params=["token", "wwm", "span"])
def masked(request, vocab, batch):
    _, _, inputs, labels = run(request.param, vocab, batch)
    return request.param, inputs, labels


def test_share_is_15_percent_and_never_above_budget(masked, batch, vocab):
    name, _, labels = masked
    real = real_tokens(batch, vocab)
    chosen = labels != IGNORE
    share = chosen.sum().item() / real.sum().item()
    assert abs(share - 0.15) < 0.005, share
    ceiling = (real.sum(1) * 15 + 99) // 100  # ceil(15% of the real tokens), exactly
    assert (chosen.sum(1) <= ceiling).all()
    if name == "span":  # SpanBERT meets its budget exactly
        assert torch.equal(chosen.sum(1), ceiling)


def test_special_and_padding_never_masked_or_labelled(masked, batch, vocab):
    _, inputs, labels = masked
    special = ~real_tokens(batch, vocab)
    assert (labels[special] == IGNORE).all()
    assert torch.equal(inputs[special], batch[special])
    replaced = inputs[~special]
    assert not vocab.is_special[replaced[replaced != vocab.mask_id]].any()  # random: never special
    chosen = labels != IGNORE
    assert torch.equal(labels[chosen], batch[chosen])
    assert torch.equal(inputs[~chosen], batch[~chosen])


def _replacement_shares(inputs, labels, mask_id):
    chosen = labels != IGNORE
    masked = (inputs == mask_id) & chosen
    kept = (inputs == labels) & chosen
    n = chosen.sum().item()
    return masked.sum().item() / n, (chosen & ~masked & ~kept).sum().item() / n, kept.sum().item() / n


@pytest.mark.parametrize("name", ["token", "wwm"])
def test_token_level_80_10_10(name, vocab, batch):
    _, _, inputs, labels = run(name, vocab, batch, seed=1)
    m, r, k = _replacement_shares(inputs, labels, vocab.mask_id)
    assert abs(m - 0.8) < 0.01 and abs(r - 0.1) < 0.01 and abs(k - 0.1) < 0.01, (m, r, k)


def test_wwm_masks_whole_words_only(vocab, batch):
    _, _, _, labels = run("wwm", vocab, batch, seed=2)
    starts = word_starts(batch, vocab)
    real = real_tokens(batch, vocab)
    chosen = labels != IGNORE
    cont = real & ~starts  # a continuation is masked exactly when the piece before it is
    prev = torch.cat([torch.zeros_like(chosen[:, :1]), chosen[:, :-1]], 1)
    assert torch.equal(chosen[cont], prev[cont])


def test_wwm_greedy_matches_berts_sequential_loop():
    g = torch.Generator().manual_seed(5)
    lengths = torch.randint(1, 5, (200, 30), generator=g)
    lengths[:, 25:] = 0
    k = torch.randint(1, 20, (200,), generator=g)
    keys = torch.rand((200, 30), generator=torch.Generator().manual_seed(9))
    got = torch.from_numpy(choose_words(lengths.numpy(), k.numpy(), keys.numpy()))
    order = keys.argsort(1)
    for b in range(200):
        taken, used = set(), 0
        for w in order[b].tolist():
            if lengths[b, w] == 0 or used + lengths[b, w] > k[b]:
                continue
            taken.add(w)
            used += int(lengths[b, w])
        assert set(torch.nonzero(got[b]).squeeze(1).tolist()) == taken


def test_span_lengths_follow_truncated_geometric(vocab, batch):
    _, outs, _, _ = run("span", vocab, batch, seed=3)
    lengths = torch.cat([o.span_lengths for o in outs])
    pmf = span_length_distribution(0.2, 10)
    expected_mean = float((pmf * torch.arange(1, 11)).sum())
    assert abs(expected_mean - 3.8) < 0.01  # clipping instead would give about 4.5
    assert len(lengths) > 10_000
    assert abs(lengths.double().mean().item() - 3.8) < 0.1
    hist = torch.bincount(lengths, minlength=11)[1:].double() / len(lengths)
    assert (hist - pmf).abs().max() < 0.01, hist


def test_spans_are_whole_words_except_one_cut_per_row(vocab, batch):
    _, _, _, labels = run("span", vocab, batch, seed=4)
    starts = word_starts(batch, vocab)
    real = real_tokens(batch, vocab)
    chosen = (labels != IGNORE).long()
    word = starts.long().cumsum(1)
    word = torch.where(real, word, 0)
    B, T = batch.shape
    pieces = torch.zeros(B, T + 1, dtype=torch.long).scatter_add_(1, word, real.long())
    hits = torch.zeros(B, T + 1, dtype=torch.long).scatter_add_(1, word, chosen)
    partial = (hits[:, 1:] > 0) & (hits[:, 1:] < pieces[:, 1:])
    assert (partial.sum(1) <= 1).all()
    assert partial.any()  # the budget does cut some final spans


def test_span_level_80_10_10_and_unigram_replacements(vocab, batch):
    _, _, inputs, labels = run("span", vocab, batch, seed=6)
    chosen = labels != IGNORE
    row, start, end = span_runs(chosen)
    run_id = (chosen & ~torch.cat([torch.zeros_like(chosen[:, :1]), chosen[:, :-1]], 1))
    run_id = run_id.flatten().long().cumsum(0)[chosen.flatten()] - 1
    size = torch.bincount(run_id)
    n_mask = torch.bincount(run_id, weights=(inputs[chosen] == vocab.mask_id).double())
    n_same = torch.bincount(run_id, weights=(inputs[chosen] == labels[chosen]).double())
    is_mask, is_keep = n_mask == size, n_same == size
    assert ((n_mask == 0) | is_mask).all()  # decided once per span, never mixed
    counts = {"mask": int(is_mask.sum()), "keep": int(is_keep.sum()),
              "random": int((~is_mask & ~is_keep).sum())}
    n = sum(counts.values())
    assert n > 15_000
    assert abs(counts["mask"] / n - 0.8) < 0.01
    assert abs(counts["random"] / n - 0.1) < 0.01 and abs(counts["keep"] / n - 0.1) < 0.01


def test_span_random_tokens_come_from_the_unigram_distribution(tokenizer, batch):
    from bertkit.masking import VocabInfo

    only = tokenizer.convert_tokens_to_ids("protein")
    unigram = torch.zeros(len(tokenizer))
    unigram[only] = 5.0
    unigram[tokenizer.mask_token_id] = 100.0  # special: must get no mass
    vocab = VocabInfo.from_tokenizer(tokenizer, unigram)
    _, _, inputs, labels = run("span", vocab, batch[:500], seed=7, mask_replace_prob=0.0,
                               random_replace_prob=1.0)
    chosen = labels != IGNORE
    assert (inputs[chosen] == only).all()


def test_sbo_boundaries_point_around_spans_with_real_boundaries(vocab, batch):
    masker = build_masker("span", vocab)
    out = masker(batch[:500], torch.Generator().manual_seed(8))
    b = out.sbo_boundaries
    assert b.shape == (*batch[:500].shape, 2) and ((b[..., 0] >= 0) == (b[..., 1] >= 0)).all()
    real = real_tokens(batch[:500], vocab)
    row, pos = torch.nonzero(b[..., 0] >= 0, as_tuple=True)
    left, right = b[row, pos, 0], b[row, pos, 1]
    assert (out.labels[row, pos] != IGNORE).all()
    assert real[row, left].all() and real[row, right].all()
    assert (out.labels[row, left] == IGNORE).all() and (out.labels[row, right] == IGNORE).all()
    assert (left < pos).all() and (pos < right).all()
    r, s, e = span_runs(out.labels != IGNORE)
    edge = ~(real[r, (s - 1).clamp(min=0)] & real[r, (e + 1).clamp(max=batch.shape[1] - 1)])
    inner = ~edge
    assert len(row) == (e - s + 1)[inner].sum() and edge.any()  # every inner span, every token
    # each position names its own merged span: left + 1 is the span start, right - 1 its end
    starts = dict(zip(zip(r[inner].tolist(), s[inner].tolist()), e[inner].tolist()))
    for rr, ll, rt in zip(row[:500].tolist(), left[:500].tolist(), right[:500].tolist()):
        assert starts[(rr, ll + 1)] == rt - 1


@pytest.mark.parametrize("name", ["token", "wwm", "span"])
def test_masking_is_reproducible_and_dynamic(name, vocab, batch):
    masker = build_masker(name, vocab)
    a = masker(batch[:64], torch.Generator().manual_seed(11))
    b = masker(batch[:64], torch.Generator().manual_seed(11))
    c = masker(batch[:64], torch.Generator().manual_seed(12))
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.labels, c.labels)


def test_rows_without_real_tokens_get_no_mask(vocab, tokenizer):
    ids = torch.full((2, 16), tokenizer.pad_token_id)
    ids[:, 0], ids[:, 1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    ids[1, 2:6] = vocab.normal_ids[:4]
    for name in ("token", "wwm", "span"):
        out = build_masker(name, vocab)(ids, torch.Generator().manual_seed(0))
        assert (out.labels[0] == IGNORE).all()
        assert (out.labels[1] != IGNORE).sum() == 1  # max(1, round(0.6)) / ceil(0.6)
    assert math.ceil(4 * 0.15) == 1


def test_span_length_sampler_matches_the_renormalised_pmf():
    from bertkit.masking.span import sample_span_lengths

    lengths = sample_span_lengths((200_000,), 0.2, 10, torch.Generator().manual_seed(0))
    hist = torch.bincount(lengths, minlength=11)[1:].double() / len(lengths)
    assert lengths.min() == 1 and lengths.max() == 10
    assert (hist - span_length_distribution(0.2, 10)).abs().max() < 0.003
    assert abs(lengths.double().mean().item() - 3.797) < 0.02
    assert (sample_span_lengths((50,), 1.0, 10, torch.Generator()) == 1).all()
