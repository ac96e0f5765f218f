"""The compiled kernels (numba) mask exactly as the NumPy formulation and the reference loops.

Both paths draw the same numbers from the generator in the same order, so the proof that the
distribution is unchanged is equality, bit for bit, of every output and of the generator state
after the call, over thousands of rows, several seeds and awkward batches (long words, short and
padded rows, rows with nothing to mask). Direct checks against BERT's and SpanBERT's sequential
loops, written out in Python, cover the kernels on their own.
"""

import math

import numpy as np
import pytest
import torch

from bertkit.errors import BertkitError
from bertkit.masking import IGNORE, build_masker, span_length_distribution
from bertkit.masking.base import kernels

pytest.importorskip("numba")

FIELDS = ("input_ids", "labels", "sbo_boundaries", "span_lengths")


def _both(name, vocab, ids, seed, **kw):
    """Mask ``ids`` by the compiled and by the NumPy path from the same seed; also return the
    next draw of each generator (equal when both consumed the same numbers)."""
    masker = build_masker(name, vocab, **kw)
    assert masker.jit  # numba is installed: the compiled path is the default
    outs, after = [], []
    for jit in (True, False):
        masker.jit = jit
        g = torch.Generator().manual_seed(seed)
        outs.append(masker(ids, g))
        after.append(torch.rand(4, generator=g))
    return outs, after


def _assert_same(outs, after):
    a, b = outs
    for field in FIELDS:
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            assert x.dtype == y.dtype and torch.equal(x, y), field
    assert torch.equal(*after)


@pytest.mark.parametrize("name", ["token", "wwm", "span"])
def test_compiled_path_gives_the_numpy_paths_masks_bit_for_bit(name, vocab, batch):
    for seed, rows in enumerate(range(0, len(batch), 250)):
        _assert_same(*_both(name, vocab, batch[rows:rows + 250], seed))


@pytest.fixture(scope="module")
def awkward(tokenizer, vocab):
    """Rows that stress the rare branches: words of 1-40 pieces, rows of 2-piece words only
    (an odd budget is never filled: the whole-word pass visits every word), rows that are almost
    all padding (span anchors mostly miss: several rounds), rows with one or no real token."""
    g = torch.Generator().manual_seed(77)
    cont = torch.nonzero(vocab.continues_word).squeeze(1)
    starts = vocab.normal_ids[~vocab.continues_word[vocab.normal_ids]]
    B, T = 96, 64
    ids = starts[torch.randint(len(starts), (B, T), generator=g)]
    for r in range(B):
        pos = 1
        while pos < T - 1:  # words of random length, some very long
            n = int(torch.randint(1, 41 if r % 3 == 0 else 4, (1,), generator=g))
            n = 2 if r % 3 == 1 else n  # 2-piece words, an odd budget: BERT's pass never fills it
            end = min(pos + n, T - 1)
            ids[r, pos + 1:end] = cont[torch.randint(len(cont), (max(0, end - pos - 1),), generator=g)]
            pos = end
    ids[:, 0], ids[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    for r in range(0, B, 5):  # padded rows, 3..22 tokens
        n = 3 + r % 20
        ids[r, n - 1] = tokenizer.sep_token_id
        ids[r, n:] = tokenizer.pad_token_id
    ids[1, 1:] = tokenizer.pad_token_id  # no real token at all
    ids[2, 2:] = tokenizer.pad_token_id  # one real token
    return ids


@pytest.mark.parametrize("name", ["token", "wwm", "span"])
@pytest.mark.parametrize("settings", [{}, {"mask_prob": 0.4, "span_p": 0.05, "max_span_length": 30},
                                      {"mask_replace_prob": 0.0, "random_replace_prob": 1.0},
                                      {"mask_replace_prob": 1.0, "random_replace_prob": 0.0}])
def test_compiled_path_matches_on_awkward_batches_and_settings(name, settings, vocab, awkward):
    if name != "span":
        settings = {k: v for k, v in settings.items() if k not in ("span_p", "max_span_length")}
    for seed in range(6):
        _assert_same(*_both(name, vocab, awkward, seed, **settings))


def _words_of(ids, vocab):
    """Python reference: the words of each row as lists of positions."""
    rows = []
    for row in ids.tolist():
        words, prev_real = [], False
        for t, x in enumerate(row):
            real = bool(vocab.is_real[x])
            if real and not (prev_real and bool(vocab.continues_word[x])):
                words.append([t])
            elif real:
                words[-1].append(t)
            prev_real = real
        rows.append(words)
    return rows


def test_wwm_kernel_is_berts_sequential_loop_with_ties_broken_by_position(vocab, awkward):
    """BERT's ``create_pretraining_data.py`` pass, written out, on keys with many ties."""
    compiled = kernels()
    ids = np.ascontiguousarray(awkward.numpy())
    real, cont = vocab.is_real.numpy(), vocab.continues_word.numpy()
    bad, word_id, word_len, _, n_words, k = compiled.words(ids, real, cont, 0.15, False)
    assert bad == -1
    keys = (torch.randint(8, (ids.shape[0], word_len.shape[1] - 1),
                          generator=torch.Generator().manual_seed(3)) / 8).float().numpy()
    chosen = set(compiled.wwm_choose(word_id, word_len, n_words, k, keys).tolist())
    expected = set()
    for b, words in enumerate(_words_of(awkward, vocab)):
        n = len(words)
        budget = min(n and sum(map(len, words)), max(1, round(sum(map(len, words)) * 0.15)))
        assert k[b] == budget
        used = 0
        for w in sorted(range(n), key=lambda w: (keys[b, w], w)):  # stable: ties by position
            if used + len(words[w]) <= budget:
                used += len(words[w])
                expected.update(b * ids.shape[1] + t for t in words[w])
    assert chosen == expected
    # the NumPy path breaks the same ties the same way (a stable sort of the keys)
    from bertkit.masking.wwm import choose_words

    all_words = _words_of(awkward, vocab)
    W = max(map(len, all_words))
    lengths = np.zeros((len(all_words), W), dtype=np.int64)
    for b, words in enumerate(all_words):
        lengths[b, :len(words)] = [len(w) for w in words]
    taken = choose_words(lengths, np.asarray(k, dtype=np.int64), keys[:, :W])
    numpy_chosen = {b * ids.shape[1] + t for b, w in zip(*np.nonzero(taken))
                    for t in all_words[b][w]}
    assert numpy_chosen == expected


def test_span_kernel_is_spanberts_sequential_loop(vocab, awkward):
    """SpanBERT's ``masking.py`` loop, written out, on the same draws as the kernel."""
    compiled = kernels()
    ids = np.ascontiguousarray(awkward.numpy())
    B, T = ids.shape
    real, cont = vocab.is_real.numpy(), vocab.continues_word.numpy()
    _, word_id, word_len, word_start, n_words, k = compiled.words(ids, real, cont, 0.15, True)
    rng = np.random.default_rng(5)
    K = 400  # enough candidates for every row in one round
    u, anchor = rng.random((B, K)), rng.integers(0, T, (B, K))
    cdf = span_length_distribution(0.2, 10).cumsum(0).numpy()
    done, taken = np.zeros(B, np.int64), np.zeros(word_len.shape, np.int64)
    rows = np.flatnonzero((k > 0) & (n_words > 0))
    out = np.empty(len(rows) * K, np.int64)
    hit, m = compiled.span_round(rows, word_id, word_len, n_words, k, done, taken, u[rows],
                                 anchor[rows], cdf, 10, out)
    assert hit.all()
    chosen, _, _, _ = compiled.span_runs(word_id, word_start, taken)
    expected, lengths = set(), []
    for b, words in enumerate(_words_of(awkward, vocab)):
        n_real = sum(map(len, words))
        budget = min(n_real, math.ceil(n_real * 0.15 - 1e-9))
        assert k[b] == budget
        word_of = {t: w for w, ws in enumerate(words) for t in ws}
        mask = set()
        for c in range(K):
            if len(mask) >= budget:
                break
            a = int(anchor[b, c])
            if a not in word_of or a in mask:  # a special token, or already masked: skipped
                continue
            length = min(int(np.searchsorted(cdf, u[b, c], side="right")) + 1, 10)
            lengths.append(length)
            for w in range(word_of[a], min(word_of[a] + length, len(words))):
                for t in words[w]:
                    if len(mask) >= budget:
                        break
                    mask.add(t)
        assert len(mask) == budget
        expected.update(b * T + t for t in mask)
    assert set(chosen.tolist()) == expected
    assert out[:m].tolist() == lengths


def test_compiled_masking_keeps_whole_words_and_the_15_percent_budget(vocab, awkward):
    out = build_masker("wwm", vocab)(awkward, torch.Generator().manual_seed(0))
    chosen = out.labels != IGNORE
    real = vocab.is_real[awkward]
    n = real.sum(1)
    assert (chosen.sum(1) <= torch.clamp(torch.round(n * 0.15), min=1)).all()
    assert not chosen[~real].any()
    for b, words in enumerate(_words_of(awkward, vocab)):
        for ws in words:
            assert len(set(chosen[b, ws].tolist())) == 1  # all or none of a word's pieces


@pytest.mark.parametrize("name", ["wwm", "span"])
def test_ids_outside_the_vocabulary_are_named(name, vocab, tokenizer):
    ids = torch.full((2, 8), vocab.normal_ids[5].item())
    ids[1, 3] = vocab.vocab_size + 7
    with pytest.raises(BertkitError, match=r"row 1, position 3.*outside the vocabulary"):
        build_masker(name, vocab)(ids, torch.Generator())


def test_jit_can_be_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv("BERTKIT_MASKING_JIT", "0")
    assert kernels.__wrapped__() is None
    monkeypatch.setenv("BERTKIT_MASKING_JIT", "1")
    assert kernels.__wrapped__() is not None
