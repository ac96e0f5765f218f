"""``bertkit vocab compare``: token overlap of two vocabularies and how they split a corpus.

Overlap is counted on exact token strings (``##`` forms included), as a count and as a share of
each vocabulary, as SciBERT reports it (SciVocab vs BaseVocab: 42%). On a corpus, a *word* is a
unit of BERT's pre-tokeniser (whitespace and punctuation split, case kept); each vocabulary's
own tokenizer then splits it (lower-casing it first if that tokenizer is uncased). Reported per
vocabulary: mean subwords per word, the share of words split into 2+ pieces and the ``[UNK]``
rate (share of pieces that are the unknown token), all weighted by word frequency, and the
most frequent words that A splits while B keeps whole.

Reference:
    Beltagy et al. (2019), SciBERT, sec. 2.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from bertkit.vocab.corpus import CorpusStats, count_words, resolve_corpus_files
from bertkit.vocab.registry import load_tokenizer, vocab_name


def token_overlap(a: set[str], b: set[str]) -> dict:
    """Overlap of two token sets.

    Returns:
        ``{"count", "pct_of_a", "pct_of_b"}``: shared tokens, and their share (%) of A and B.
    """
    common = len(a & b)
    return {"count": common, "pct_of_a": round(100 * common / max(len(a), 1), 2),
            "pct_of_b": round(100 * common / max(len(b), 1), 2)}


def split_words(tokenizer, words: Sequence[str]) -> list[list[str]]:
    """Split each word with ``tokenizer`` (normaliser, pre-tokeniser, model; no special tokens).

    Args:
        tokenizer: a fast ``transformers`` tokenizer.
        words: words as BERT's pre-tokeniser produces them.

    Returns:
        The pieces of each word, shape ``[len(words)][n_pieces]``.
    """
    backend = plain_backend(tokenizer)
    encodings = backend.encode_batch(list(words), add_special_tokens=False)
    return [enc.tokens for enc in encodings]


def plain_backend(tokenizer):
    """A copy of ``tokenizer``'s ``tokenizers.Tokenizer`` with padding and truncation off."""
    from tokenizers import Tokenizer

    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    backend.no_padding()
    backend.no_truncation()
    return backend


def split_stats(pieces: Sequence[list[str]], counts: Sequence[int], unk: str | None) -> dict:
    """Frequency-weighted splitting figures.

    Args:
        pieces: pieces of each distinct word.
        counts: occurrences of each distinct word.
        unk: the unknown token.

    Returns:
        ``{"subwords_per_word", "split_share_pct", "unk_rate_pct"}``.
    """
    words = sum(counts) or 1
    n_pieces = sum(len(p) * c for p, c in zip(pieces, counts))
    split = sum(c for p, c in zip(pieces, counts) if len(p) > 1)
    unks = sum(p.count(unk) * c for p, c in zip(pieces, counts)) if unk else 0
    return {"subwords_per_word": round(n_pieces / words, 4),
            "split_share_pct": round(100 * split / words, 2),
            "unk_rate_pct": round(100 * unks / max(n_pieces, 1), 4)}


def compare_vocabs(a: str | Path, b: str | Path, corpus: Sequence[str | Path] | None = None,
                   *, top: int = 20, skip_bad_lines: bool = False) -> dict:
    """Compare vocabularies A and B, and, given a corpus, how each splits its words.

    Args:
        a: a vocabulary argument (name, ``vocab.txt``, directory or hub id).
        b: the same for B.
        corpus: optional text files / directories to measure splitting on.
        top: how many "A splits, B keeps whole" words to list.
        skip_bad_lines: drop non-UTF-8 lines of the corpus instead of failing.

    Returns:
        ``{"a": {"name", "size"}, "b": {...}, "overlap": {...}}`` plus, with a corpus,
        ``"corpus": {"files", "lines", "words", "distinct_words", "a": stats, "b": stats}`` and
        ``"a_splits_b_keeps": [{"word", "count", "a_pieces"}]``.

    Raises:
        BertkitError: a vocabulary or corpus cannot be read.

    Reference:
        Beltagy et al. (2019), SciBERT, sec. 2 (42% SciVocab/BaseVocab overlap).
    """
    tok_a, tok_b = load_tokenizer(a), load_tokenizer(b)
    va, vb = set(tok_a.get_vocab()), set(tok_b.get_vocab())
    result: dict = {"a": {"name": vocab_name(a), "size": len(va)},
                    "b": {"name": vocab_name(b), "size": len(vb)},
                    "overlap": token_overlap(va, vb)}
    if not corpus:
        return result
    files = resolve_corpus_files(corpus)
    stats = CorpusStats()
    counter: Counter[str] = count_words(files, skip_bad_lines=skip_bad_lines, stats=stats)
    words = list(counter)
    counts = [counter[w] for w in words]
    pa, pb = split_words(tok_a, words), split_words(tok_b, words)
    result["corpus"] = {"files": [str(f) for f in files], "lines": stats.lines,
                        "words": sum(counts), "distinct_words": len(words),
                        "a": split_stats(pa, counts, tok_a.unk_token),
                        "b": split_stats(pb, counts, tok_b.unk_token)}
    found = [(c, w, p) for w, c, p, q in zip(words, counts, pa, pb)
             if len(p) > 1 and len(q) == 1 and q[0] != tok_b.unk_token and w.isalpha()]
    found.sort(key=lambda x: (-x[0], x[1]))
    result["a_splits_b_keeps"] = [{"word": w, "count": c, "a_pieces": p}
                                  for c, w, p in found[:top]]
    return result


def render_comparison(result: dict, console) -> None:
    """Print a comparison as rich tables on ``console``."""
    from rich.table import Table

    a, b = result["a"]["name"], result["b"]["name"]
    ov = result["overlap"]
    table = Table(title="Vocabulary comparison")
    table.add_column("measure")
    table.add_column(f"A: {a}", justify="right")
    table.add_column(f"B: {b}", justify="right")
    table.add_row("tokens", f"{result['a']['size']:,}", f"{result['b']['size']:,}")
    table.add_row("shared tokens (share of own vocab)", f"{ov['count']:,} ({ov['pct_of_a']}%)",
                  f"{ov['count']:,} ({ov['pct_of_b']}%)")
    if "corpus" in result:
        ca, cb = result["corpus"]["a"], result["corpus"]["b"]
        table.add_row("subwords per word", f"{ca['subwords_per_word']:.3f}",
                      f"{cb['subwords_per_word']:.3f}")
        table.add_row("words split (%)", f"{ca['split_share_pct']:.2f}",
                      f"{cb['split_share_pct']:.2f}")
        table.add_row("[UNK] rate (% of pieces)", f"{ca['unk_rate_pct']:.4f}",
                      f"{cb['unk_rate_pct']:.4f}")
        table.caption = (f"{result['corpus']['words']:,} words "
                         f"({result['corpus']['distinct_words']:,} distinct) in "
                         f"{result['corpus']['lines']:,} lines")
    console.print(table)
    if result.get("a_splits_b_keeps"):
        words = Table(title=f"Frequent words A ({a}) splits and B ({b}) keeps whole")
        words.add_column("word")
        words.add_column("count", justify="right")
        words.add_column("A pieces")
        for row in result["a_splits_b_keeps"]:
            words.add_row(row["word"], f"{row['count']:,}", " ".join(row["a_pieces"]))
        console.print(words)
