"""``bertkit vocab build``: train a WordPiece vocabulary on a corpus and save it as a tokenizer.

The output directory holds ``vocab.txt`` (one token a line, id = line number - 1, special
tokens first), ``tokenizer.json``, ``tokenizer_config.json``, ``special_tokens_map.json``
(loadable with ``AutoTokenizer.from_pretrained(DIR)`` and ``BertTokenizerFast``) and
``stats.json``. The directory is written atomically: on any error nothing is left behind.

Every build encodes its corpus with the saved tokenizer and records the coverage in
``stats.json`` (``coverage``: ``[UNK]`` rate, characters left out of the alphabet with their
counts; :mod:`bertkit.vocab.coverage`). ``normalize`` (``nfkc``, ...) applies a Unicode
normalisation before BERT's own normaliser, in training and in the saved ``tokenizer.json``; see
:mod:`bertkit.vocab.coverage` for how look-alike characters (MICRO SIGN and Greek mu) are treated
without and with it.

Reference:
    Beltagy et al. (2019), SciBERT, sec. 2 (SciVocab: 30K tokens built on the scientific
    corpus); Devlin et al. (2019), BERT, sec. 3.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from bertkit.errors import BertkitError
from bertkit.io import atomic_path
from bertkit.vocab.corpus import (CorpusStats, corpus_size, iter_corpus_batches, progress_bar,
                                  resolve_corpus_files)
from bertkit.vocab.coverage import (NORMALIZATIONS, counting_tokens, normalize_batches,
                                    unicode_normalizer, vocab_coverage)
from bertkit.vocab.wordpiece import (BERT_SPECIAL_TOKENS, finalize_vocab, tokenizers_parallelism,
                                     train_wordpiece)

ALGORITHMS = ("wordpiece", "sentencepiece")
VOCAB_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json", "stats.json")


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far, in MiB (``getrusage`` ``ru_maxrss``)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def check_output_dir(out: str | Path, overwrite: bool) -> Path:
    """Refuse to replace an existing vocabulary or a non-empty directory without ``overwrite``.

    Raises:
        BertkitError: ``out`` is a file, or a directory that is not empty (and no ``overwrite``).
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BertkitError("the output path is a file", file=out, expected="a directory")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        what = ("already holds a vocabulary" if any((out / f).exists() for f in VOCAB_FILES)
                else "is not empty")
        raise BertkitError(f"the output directory {what}", file=out,
                           expected="a new or empty directory, or --overwrite to replace it")
    return out


def _check_special_tokens(special_tokens: Sequence[str]) -> list[str]:
    tokens = [t.strip() for t in special_tokens]
    if any(not t or any(c.isspace() for c in t) for t in tokens):
        raise BertkitError("a special token is empty or holds whitespace",
                           expected="tokens such as [PAD] [UNK] [CLS] [SEP] [MASK]")
    if len(set(tokens)) != len(tokens):
        raise BertkitError(f"duplicate special tokens: {', '.join(tokens)}",
                           expected="each special token once")
    missing = [t for t in BERT_SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise BertkitError(f"--special-tokens lacks {', '.join(missing)}",
                           expected="BERT's five special tokens, plus any extra ones")
    return tokens


def bert_tokenizer(vocab: Sequence[str], *, uncased: bool, special_tokens: Sequence[str],
                   normalize: str = "none"):
    """A ``tokenizers.Tokenizer`` equal to ``transformers``' ``BertTokenizerFast`` for ``vocab``.

    BERT's normaliser (lower case and accent stripping only when ``uncased``), pre-tokeniser,
    WordPiece model (``##`` prefix, 100-character words), ``[CLS] A [SEP] B [SEP]`` template
    and WordPiece decoder; ``special_tokens`` are registered as special added tokens. With
    ``normalize`` other than ``"none"`` the normaliser is ``Sequence([NFKC/NFC/..., BERT's])``.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors
    from tokenizers import pre_tokenizers

    ids = {t: i for i, t in enumerate(vocab)}
    tok = Tokenizer(models.WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100))
    bert = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                      strip_accents=None, lowercase=uncased)
    unicode = unicode_normalizer(normalize)
    tok.normalizer = bert if unicode is None else normalizers.Sequence([unicode, bert])
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t in special_tokens])
    return tok


def save_tokenizer_dir(directory: Path, vocab: Sequence[str], *, uncased: bool,
                       special_tokens: Sequence[str], extra: dict | None = None,
                       normalize: str = "none") -> None:
    """Write a BERT WordPiece tokenizer for ``vocab`` into ``directory`` (created).

    The files are those ``BertTokenizerFast.save_pretrained`` writes plus ``vocab.txt`` and
    ``special_tokens_map.json``, built with ``tokenizers`` alone (importing ``transformers``
    would cost more than a small build).

    Args:
        directory: target directory (a temporary one; the caller renames it into place).
        vocab: tokens, index = id.
        uncased: BERT uncased normalisation (lower case, strip accents) or cased.
        special_tokens: all special tokens (the BERT five and any extra ones).
        extra: ``stats.json`` content, written when given.
        normalize: Unicode normalisation in ``tokenizer.json`` (see :func:`bert_tokenizer`).
            ``transformers`` 5 rebuilds a ``BertTokenizer`` from ``vocab.txt`` and its config,
            dropping such a normaliser, so the config then names ``PreTrainedTokenizerFast``,
            which loads ``tokenizer.json`` as written.
    """
    directory.mkdir(parents=True)
    bert_tokenizer(vocab, uncased=uncased, special_tokens=special_tokens,
                   normalize=normalize).save(str(directory / "tokenizer.json"))
    (directory / "vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    smap = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
            "cls_token": "[CLS]", "mask_token": "[MASK]"}
    config = {"tokenizer_class": "BertTokenizer" if normalize == "none"
              else "PreTrainedTokenizerFast", "do_lower_case": uncased,
              "strip_accents": None, "tokenize_chinese_chars": True, "model_max_length": 512,
              **smap}
    extras = [t for t in special_tokens if t not in BERT_SPECIAL_TOKENS]
    if extras:
        smap["additional_special_tokens"] = extras
        config["extra_special_tokens"] = extras
    for name, data in (("special_tokens_map.json", smap), ("tokenizer_config.json", config),
                       ("stats.json", extra)):
        if data is not None:
            (directory / name).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")


def build_vocab(corpus: Sequence[str | Path], out: str | Path, *, size: int = 30000,
                uncased: bool = True, algorithm: str = "wordpiece", min_frequency: int = 2,
                limit_alphabet: int | None = None,
                special_tokens: Sequence[str] = BERT_SPECIAL_TOKENS,
                skip_bad_lines: bool = False, overwrite: bool = False,
                show_progress: bool = False, normalize: str = "none") -> dict:
    """Build a WordPiece vocabulary on ``corpus`` and save it as a tokenizer directory.

    Args:
        corpus: text files, ``.gz`` files or directories of them (read streaming).
        out: output directory (see the module docstring for its files).
        size: the vocabulary size in tokens, special tokens included (SciVocab: 30,000).
        uncased: lower case and strip accents (BERT uncased); ``False`` keeps both (cased).
        algorithm: ``"wordpiece"`` (``tokenizers``' trainer, default) or ``"sentencepiece"``
            (SentencePiece BPE converted to WordPiece form, SciBERT's route).
        min_frequency: minimum count of a merge (WordPiece route).
        limit_alphabet: keep at most this many characters (WordPiece route).
        special_tokens: reserved tokens placed first; must include BERT's five.
        skip_bad_lines: drop non-UTF-8 or binary lines instead of failing.
        overwrite: replace an existing output directory.
        show_progress: show progress bars (reading and training) on stderr.
        normalize: Unicode normalisation applied before BERT's normaliser, in training and in
            the saved tokenizer: ``none`` (default), ``nfc``, ``nfkc``, ``nfd`` or ``nfkd``
            (see :mod:`bertkit.vocab.coverage` for look-alike characters).

    Returns:
        The ``stats.json`` content: requested and actual size, case, algorithm, normalisation,
        corpus files, lines, words and bytes, skipped lines, alphabet size, ``coverage`` of the
        corpus (:func:`~bertkit.vocab.coverage.vocab_coverage`: ``unk_rate``, ``left_out``
        characters with counts), seconds, peak memory (MiB).

    Raises:
        BertkitError: empty or missing corpus, a binary or non-UTF-8 file, a size below the
            alphabet plus special tokens, an existing output directory, a bad option.

    Reference:
        Beltagy et al. (2019), SciBERT, sec. 2; Wu et al. (2016), sec. 4.1; Devlin et al.
        (2019), sec. 3.
    """
    start = time.perf_counter()
    _check_options(algorithm, size, min_frequency, limit_alphabet, normalize)
    specials = _check_special_tokens(special_tokens)
    out = check_output_dir(out, overwrite)
    files = resolve_corpus_files(corpus)
    stats = CorpusStats()
    token_counts: Counter[str] = Counter()  # gathered while training reads the corpus
    learned = _learn(files, stats, token_counts, algorithm=algorithm, size=size, uncased=uncased,
                     specials=specials, min_frequency=min_frequency,
                     limit_alphabet=limit_alphabet, skip_bad_lines=skip_bad_lines,
                     show_progress=show_progress, normalize=normalize)
    vocab = finalize_vocab(learned, specials, size)
    tokenizer = bert_tokenizer(vocab, uncased=uncased, special_tokens=specials,
                               normalize=normalize)
    with tokenizers_parallelism():
        coverage = vocab_coverage(tokenizer, token_counts, vocab)
    info = {
        "size": len(vocab), "requested_size": size, "case": "uncased" if uncased else "cased",
        "algorithm": algorithm, "normalize": normalize, "min_frequency": min_frequency,
        "limit_alphabet": limit_alphabet,
        "special_tokens": specials, "alphabet": len({t for t in vocab if len(t) == 1}),
        "corpus": {"files": [str(f) for f in stats.files], "bytes": stats.bytes,
                   "lines": stats.lines, "words": stats.words,
                   "skipped_lines": stats.skipped_lines},
        "coverage": coverage,
        "seconds": round(time.perf_counter() - start, 2),
        "peak_memory_mb": peak_memory_mb(),
    }
    with atomic_path(out) as tmp:
        save_tokenizer_dir(tmp, vocab, uncased=uncased, special_tokens=specials, extra=info,
                           normalize=normalize)
    return info


def _check_options(algorithm: str, size: int, min_frequency: int, limit_alphabet: int | None,
                   normalize: str) -> None:
    """Refuse an unknown algorithm or normalisation and sizes out of range (see
    :func:`build_vocab`).

    Raises:
        BertkitError: naming the option and what it accepts.
    """
    if algorithm not in ALGORITHMS:
        raise BertkitError(f"unknown --algorithm {algorithm!r}", expected=" or ".join(ALGORITHMS))
    if size < 1:
        raise BertkitError(f"--size must be positive, got {size}")
    if min_frequency < 0 or (limit_alphabet is not None and limit_alphabet < 1):
        raise BertkitError("--min-frequency must be >= 0 and --limit-alphabet >= 1")
    if normalize not in NORMALIZATIONS:
        raise BertkitError(f"unknown --normalize {normalize!r}", expected=", ".join(NORMALIZATIONS))


def _learn(files: list[Path], stats: CorpusStats, token_counts: Counter, *, algorithm: str,
           size: int, uncased: bool, specials: list[str], min_frequency: int,
           limit_alphabet: int | None, skip_bad_lines: bool, show_progress: bool,
           normalize: str) -> list[str]:
    """Read ``files`` once (normalised; counted into ``stats`` and, by pre-token, into
    ``token_counts``) while the chosen algorithm trains on them; return its learned tokens
    (before :func:`~bertkit.vocab.wordpiece.finalize_vocab`). Options as :func:`build_vocab`'s.

    Raises:
        BertkitError: an empty corpus, one with no text (only blank or skipped lines), or a
            bad line (see :func:`~bertkit.vocab.corpus.iter_corpus_batches`).
    """
    total = corpus_size(files)
    if total == 0:
        raise BertkitError("the corpus is empty", file=files[0] if len(files) == 1 else None,
                           expected="text, one sentence or paragraph a line")
    with progress_bar("reading + training", total, show_progress) as advance:
        batches = counting_tokens(normalize_batches(
            iter_corpus_batches(files, skip_bad_lines=skip_bad_lines, stats=stats,
                                progress=advance), normalize), token_counts)
        if algorithm == "wordpiece":
            learned = train_wordpiece(batches, size=size, uncased=uncased,
                                      special_tokens=specials, min_frequency=min_frequency,
                                      limit_alphabet=limit_alphabet,
                                      show_progress=show_progress)
        else:
            from bertkit.vocab.sentencepiece import train_sentencepiece

            learned = train_sentencepiece(batches, size=size, uncased=uncased,
                                          special_tokens=specials,
                                          limit_alphabet=limit_alphabet,
                                          show_progress=show_progress)
    if stats.lines == 0:
        raise BertkitError("the corpus has no text (only blank or skipped lines)",
                           file=files[0] if len(files) == 1 else None,
                           expected="text, one sentence or paragraph a line")
    return learned
