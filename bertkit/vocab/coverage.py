"""How well a built vocabulary covers the corpus it was built on, and Unicode normalisation.

A WordPiece vocabulary turns a whole word into ``[UNK]`` when the word holds a character outside
its alphabet (or is longer than 100 characters): ``--limit-alphabet 30`` on a scientific corpus
makes ``10 µM`` two ``[UNK]``. :func:`vocab_coverage` encodes the corpus it was built on with the
saved tokenizer and counts what was lost, so ``vocab build`` reports it instead of losing it
silently.

Look-alike characters. BERT's normaliser (every bertkit vocabulary uses it) removes control
characters, turns every Unicode space (NO-BREAK SPACE included) into a space and, in uncased mode,
lower-cases and strips accents (NFD, then combining marks dropped: ``Å`` and ANGSTROM SIGN ``Å``
both become ``a``). It applies no compatibility mapping: MICRO SIGN ``µ`` (U+00B5) and GREEK SMALL
LETTER MU ``μ`` (U+03BC) stay two characters with two vocabulary entries (a corpus with only one
of them leaves the other ``[UNK]``-prone), as do ``℃`` (U+2103) and ``°C``, superscript ``²`` and
``2``, the ligature ``ﬁ`` and ``fi``, full-width ``Ａ`` and ``A``; in cased mode ANGSTROM SIGN
``Å`` (U+212B) and ``Å`` (U+00C5) also stay apart. An explicit Unicode normalisation
(:data:`NORMALIZATIONS`) runs before BERT's normaliser, when training and again in the saved
``tokenizer.json`` (a ``normalizers.Sequence``), so any ``AutoTokenizer`` applies it: ``nfkc``
maps all the pairs above together (``µ`` -> ``μ``, ``℃`` -> ``°C``, ``²`` -> ``2``, ``ﬁ`` -> ``fi``,
``Ａ`` -> ``A``, ``Å`` -> ``Å``); ``nfc`` only the canonical ones (``Å`` -> ``Å``); ``nfd``/``nfkd``
decompose accented letters into letter + combining mark.

Reference:
    Unicode Standard Annex #15, Unicode Normalization Forms; Devlin et al. (2019), BERT's
    ``BasicTokenizer`` (``_clean_text``, ``_run_strip_accents``).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Iterable

NORMALIZATIONS = ("none", "nfc", "nfkc", "nfd", "nfkd")
SHOWN_CHARACTERS = 50  # characters left out that stats.json lists (the most frequent first)


def unicode_normalizer(form: str):
    """The ``tokenizers`` normaliser for ``form`` (one of :data:`NORMALIZATIONS`), or None for
    ``"none"``."""
    from tokenizers import normalizers

    return {"none": None, "nfc": normalizers.NFC, "nfkc": normalizers.NFKC,
            "nfd": normalizers.NFD, "nfkd": normalizers.NFKD}[form]() if form != "none" else None


def normalize_batches(batches: Iterable[list[str]], form: str) -> Iterable[list[str]]:
    """``batches`` of lines with Unicode normalisation ``form`` applied (unchanged for ``none``)."""
    if form == "none":
        yield from batches
        return
    upper = form.upper()
    for lines in batches:
        yield [unicodedata.normalize(upper, line) for line in lines]


def describe_char(ch: str) -> str:
    """``'µ U+00B5 MICRO SIGN'``: the character, its code point and Unicode name.

    >>> describe_char("µ")
    'µ U+00B5 MICRO SIGN'
    """
    return f"{ch} U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED')}"


def counting_tokens(batches: Iterable[list[str]], counts: Counter) -> Iterable[list[str]]:
    """Pass ``batches`` of lines through, counting their whitespace-separated tokens in
    ``counts`` (so the build's own reading pass gathers what :func:`vocab_coverage` needs)."""
    for lines in batches:
        counts.update("\n".join(lines).split())
        yield lines


def vocab_coverage(tokenizer, token_counts: Counter, vocab: Iterable[str],
                   prefix: str = "##") -> dict:
    """Encode a corpus with a built tokenizer and count what becomes ``[UNK]``.

    Each distinct whitespace-separated token is encoded once and weighted by its count: BERT's
    normaliser and pre-tokeniser never join text across whitespace, so this equals encoding
    every line (about 10x faster on the shared corpus: 112K distinct tokens for 3.6M words).

    Args:
        tokenizer: the ``tokenizers.Tokenizer`` saved as ``tokenizer.json`` (its normaliser,
            pre-tokeniser and WordPiece model; ``[UNK]`` in its vocabulary).
        token_counts: token -> occurrences in the corpus (:func:`counting_tokens`).
        vocab: the vocabulary, whose one-character tokens (``c``, ``##c``) form the alphabet.
        prefix: the continuation prefix of ``vocab``.

    Returns:
        ``{"pieces": P, "unk": U, "unk_rate": U / P (0 for no pieces), "characters": C,
        "characters_left_out": K, "distinct_left_out": D, "left_out": [{"char", "codepoint",
        "name", "count"}, ...]}`` where ``C`` counts the characters after normalisation, ``K``
        the occurrences of the ``D`` characters outside the alphabet, and ``left_out`` lists the
        :data:`SHOWN_CHARACTERS` most frequent of those (ties in code point order). A word with
        such a character, or longer than 100 characters, is one ``[UNK]``.
    """
    unk_id = tokenizer.token_to_id("[UNK]")
    alphabet = {t[len(prefix):] if t.startswith(prefix) else t for t in vocab
                if len(t) == 1 or (t.startswith(prefix) and len(t) == len(prefix) + 1)}
    normalizer = tokenizer.normalizer
    words = list(token_counts)
    chars: Counter[str] = Counter()
    pieces = unk = 0
    for word, enc in zip(words, tokenizer.encode_batch(words, add_special_tokens=False)):
        n = token_counts[word]
        pieces += n * len(enc.ids)
        unk += n * enc.ids.count(unk_id)
        for ch in normalizer.normalize_str(word) if normalizer is not None else word:
            chars[ch] += n
    left = sorted(((n, c) for c, n in chars.items() if c not in alphabet and not c.isspace()),
                  key=lambda x: (-x[0], x[1]))
    return {
        "pieces": pieces, "unk": unk, "unk_rate": unk / pieces if pieces else 0.0,
        "characters": sum(n for c, n in chars.items() if not c.isspace()),
        "characters_left_out": sum(n for n, _ in left), "distinct_left_out": len(left),
        "left_out": [{"char": c, "codepoint": f"U+{ord(c):04X}",
                      "name": unicodedata.name(c, "UNNAMED"), "count": n}
                     for n, c in left[:SHOWN_CHARACTERS]],
    }


def coverage_line(coverage: dict, shown: int = 8) -> str:
    """One line for the console: the ``[UNK]`` rate and the most frequent characters left out.

    >>> coverage_line({"pieces": 95, "unk": 12, "unk_rate": 12 / 95, "left_out": [
    ...     {"char": "µ", "codepoint": "U+00B5", "name": "MICRO SIGN", "count": 4}]})
    '12 [UNK] in 95 pieces (12.63%) re-encoding the corpus; characters left out of the alphabet: µ U+00B5 MICRO SIGN x4'
    """
    pct = 100 * coverage["unk_rate"]
    shown_pct = f"{pct:.2f}" if pct == 0 or pct >= 0.01 else f"{pct:.1g}"
    text = (f"{coverage['unk']:,} [UNK] in {coverage['pieces']:,} pieces ({shown_pct}%) "
            f"re-encoding the corpus")
    left = coverage["left_out"]
    if left:
        text += "; characters left out of the alphabet: " + ", ".join(
            f"{d['char']} {d['codepoint']} {d['name']} x{d['count']:,}" for d in left[:shown])
        if coverage.get("distinct_left_out", len(left)) > shown:
            text += f", ... ({coverage['distinct_left_out']} characters in all)"
    return text


def report_build(info: dict, out, console) -> None:
    """Print what ``build_vocab`` made: size, corpus, time and memory, a short-vocabulary warning
    and the coverage (the [UNK] rate, with its fix when there are unknowns), on ``console`` (a
    ``rich`` Console; ``bertkit vocab build`` and a recipe's vocab stage print the same)."""
    c = info["corpus"]
    console.print(
        f"[green]saved[/] {out}: {info['size']:,} tokens ({info['case']}, {info['algorithm']}) "
        f"from {c['lines']:,} lines / {c['words']:,} words in {info['seconds']} s, "
        f"peak memory {info['peak_memory_mb']} MiB"
        + (f", {c['skipped_lines']:,} bad lines skipped" if c["skipped_lines"] else ""),
        highlight=False)
    if info["size"] < info["requested_size"]:
        console.print(
            f"[yellow]warning:[/] the corpus yields only {info['size']:,} of the "
            f"{info['requested_size']:,} tokens asked for (every word and piece seen "
            f"{max(info['min_frequency'], 1)}+ times is already in); a larger corpus gives more",
            highlight=False)
    cov = info["coverage"]
    if cov["unk"]:
        fix = ("a larger --limit-alphabet (or none) keeps more characters; stats.json lists "
               "those left out" if cov["left_out"]
               else "these are words longer than 100 characters, which WordPiece leaves whole")
        console.print(f"[yellow]warning:[/] {coverage_line(cov)}; {fix}", highlight=False)
    else:
        console.print(f"coverage: {coverage_line(cov)}", highlight=False)
