"""Thousands of packed sequences of random WordPiece ids (about 1 in 6 a ``##`` piece), with
document separators inside and some padded rows, for the statistical masking tests."""

import numpy as np
import pytest
import torch

from bertkit.masking import VocabInfo

N_SEQ, T = 4000, 128


@pytest.fixture(scope="session")
def vocab(tokenizer):
    rng = np.random.default_rng(0)
    unigram = rng.zipf(1.3, size=len(tokenizer)).astype(float)
    return VocabInfo.from_tokenizer(tokenizer, unigram)


@pytest.fixture(scope="session")
def batch(tokenizer, vocab):
    g = torch.Generator().manual_seed(123)
    ids = vocab.normal_ids[torch.randint(len(vocab.normal_ids), (N_SEQ, T), generator=g)]
    ids[:, 0] = tokenizer.cls_token_id
    ids[:, -1] = tokenizer.sep_token_id
    ids[::7, 60] = tokenizer.sep_token_id  # a document break inside
    for r in range(3, N_SEQ, 11):  # padded rows of varying length
        n = 20 + r % 90
        ids[r, n - 1] = tokenizer.sep_token_id
        ids[r, n:] = tokenizer.pad_token_id
    return ids


@pytest.fixture(autouse=True, scope="package")
def one_thread():
    """Small tensors: extra threads only add overhead on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
