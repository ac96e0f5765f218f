"""Probe: can bertkit's default WordPiece build beat the bare `tokenizers` trainer exactly?

The only shortcut that keeps `tokenizers`' WordPiece trainer (it has no API to train from word
counts) is to count whitespace tokens in Python, normalise and pre-tokenise each distinct token
once in Rust (``PreTokenizedString`` with BERT's normaliser and pre-tokeniser, offsets mapped back
to the distinct tokens), then feed the trainer the pre-split words, each repeated by its count,
with a plain ``WhitespaceSplit``. This script times that route and the bare trainer on the same
file and compares the vocabularies. Measured on `corpus/train.txt` (20 MB, 2 cores), two runs:
5.98 s vs 6.94 s and 6.70 s vs 7.64 s bare, 14-16 tokens different (tie order), so bertkit does
not use it (issue 3's notes; SentencePiece's direct call takes 2.2 s).

Usage:
    BERTKIT_DATA=../shared/data python benchmarks/vocab_count_probe.py
"""

from __future__ import annotations

import collections
import os
import time
from pathlib import Path

import numpy as np
from tokenizers import PreTokenizedString, Tokenizer, models, normalizers, pre_tokenizers, trainers

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _trainer():
    return trainers.WordPieceTrainer(vocab_size=30000, min_frequency=2, special_tokens=SPECIALS,
                                     continuing_subword_prefix="##", show_progress=False)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None,
                    help="text to count (default: $BERTKIT_DATA/corpus/train.txt)")
    args = ap.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    path = args.corpus or Path(os.environ.get("BERTKIT_DATA", "../shared/data")) / "corpus" / \
        "train.txt"
    t0 = time.perf_counter()
    text = path.read_text(encoding="utf-8")
    raw = collections.Counter()
    for i in range(0, len(text), 1 << 22):
        raw.update(text[i:i + (1 << 22)].split())
    t1 = time.perf_counter()
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                      strip_accents=True, lowercase=True)
    pre = pre_tokenizers.BertPreTokenizer()
    tokens = list(raw)
    pts = PreTokenizedString("\n".join(tokens))
    pts.normalize(lambda ns: norm.normalize(ns))
    pre.pre_tokenize(pts)
    splits = pts.get_splits(offset_referential="original", offset_type="char")
    starts = np.concatenate([[0], np.cumsum([len(t) + 1 for t in tokens])[:-1]])
    owner = np.searchsorted(starts, [s[1][0] for s in splits], side="right") - 1
    counts = np.fromiter(raw.values(), dtype=np.int64, count=len(tokens))[owner].tolist()
    words = collections.Counter()
    for split, c in zip(splits, counts):
        words[split[0]] += c
    t2 = time.perf_counter()

    def chunks():
        buf, size = [], 0
        for w, c in words.items():
            buf.append((w + " ") * c)
            size += len(buf[-1])
            if size > 1 << 20:
                yield "".join(buf)
                buf, size = [], 0
        if buf:
            yield "".join(buf)

    fast = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    fast.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast.train_from_iterator(chunks(), _trainer())
    t3 = time.perf_counter()
    bare = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    bare.normalizer, bare.pre_tokenizer = norm, pre
    bare.train([str(path)], _trainer())
    t4 = time.perf_counter()
    a, b = set(fast.get_vocab()), set(bare.get_vocab())
    print(f"count {t1 - t0:.2f} s, normalise distinct {t2 - t1:.2f} s, feed+train {t3 - t2:.2f} s:"
          f" total {t3 - t0:.2f} s; bare trainer {t4 - t3:.2f} s; vocabularies differ in "
          f"{len(a ^ b)} tokens")


if __name__ == "__main__":
    main()
