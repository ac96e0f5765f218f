"""A small corpus of biomedical-looking sentences for pretraining tests."""

import random

import pytest

WORDS = ("the protein kinase inhibitor reduced phosphorylation of stat3 in cardiomyocytes while "
         "glucocorticoid receptor transcripts and nephrotoxicity were observed in rats treated with "
         "cisplatin aspirin tumor suppressor gene expression regulates cellular differentiation").split()


def write_corpus(path, lines=400, seed=0, docs_every=50):
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 25))) + " .")
        if docs_every and i % docs_every == docs_every - 1:
            out.append("")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "corpus.txt")


class Killed(Exception):
    """What :func:`die_after` raises: a run killed in the middle."""


def die_after(monkeypatch, batches_cls, n: int):
    """Make ``batches_cls.iter_batches`` raise :class:`Killed` once ``n`` batches have been
    yielded (a process killed mid-run); returns a function that undoes it."""
    real_iter = batches_cls.iter_batches
    seen = {"n": 0}

    def dying(self, epoch, start=0):
        for batch in real_iter(self, epoch, start):
            if seen["n"] == n:
                raise Killed
            seen["n"] += 1
            yield batch

    monkeypatch.setattr(batches_cls, "iter_batches", dying)
    return lambda: monkeypatch.setattr(batches_cls, "iter_batches", real_iter)
