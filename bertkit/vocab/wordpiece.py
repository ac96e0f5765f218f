"""WordPiece training with the ``tokenizers`` library, and the alphabet rules every route shares.

The trainer sees the corpus exactly as a BERT tokenizer will: ``BertNormalizer`` (lower case and
accent stripping only when uncased) then ``BertPreTokenizer`` (split on whitespace and
punctuation). After training, every character of the alphabet is guaranteed in both forms
(``c`` and ``##c``; punctuation and CJK characters only as ``c``, since BERT always isolates
them), so a word made of known characters never becomes ``[UNK]``: Greek letters, the degree
and micro signs and other frequent scientific symbols survive as tokens.

Reference:
    Wu et al. (2016), GNMT, sec. 4.1 (wordpieces); Devlin et al. (2019), BERT, sec. 3;
    Beltagy et al. (2019), SciBERT, sec. 2 (SciVocab).
"""

from __future__ import annotations

import functools
import os
import unicodedata
from contextlib import contextmanager
from typing import Iterable, Iterator, Sequence

from bertkit.errors import BertkitError

BERT_SPECIAL_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PREFIX = "##"


@functools.lru_cache(maxsize=None)  # called per character of every piece: cache the few thousand
def is_isolated_char(ch: str) -> bool:
    """True for characters BERT's pre-tokeniser always splits off as one-character words.

    That is BERT's punctuation (ASCII symbols and Unicode ``P*``) and CJK ideographs; such a
    character never needs a ``##`` continuation form.

    Reference:
        Devlin et al. (2019): ``_is_punctuation`` / ``_is_chinese_char`` in BERT's tokenizer.
    """
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    if unicodedata.category(ch).startswith("P"):
        return True
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


def alphabet_forms(tokens: Iterable[str]) -> list[str]:
    """The one-character tokens a vocabulary needs so that no known character becomes [UNK].

    Args:
        tokens: learned tokens (no special tokens); ``##`` marks a word-internal piece.

    Returns:
        Sorted ``c`` and ``##c`` for every character ``c`` in ``tokens`` (``c`` only for
        characters that :func:`is_isolated_char` accepts).
    """
    chars = set()
    for tok in tokens:
        chars.update(tok[len(PREFIX):] if tok.startswith(PREFIX) and len(tok) > len(PREFIX)
                     else tok)
    forms = []
    for ch in sorted(chars):
        forms.append(ch)
        if not is_isolated_char(ch):
            forms.append(PREFIX + ch)
    return forms


def finalize_vocab(learned: Sequence[str], special_tokens: Sequence[str], size: int) -> list[str]:
    """Special tokens first, then the full alphabet (sorted), then learned tokens in rank order.

    The one-character forms (see :func:`alphabet_forms`) are always kept, in sorted order (so
    the file does not depend on the trainer's hash order); multi-character tokens fill the
    remaining ``size`` entries in rank order, the lowest-ranked ones dropped.

    Args:
        learned: trained tokens, most important first; special tokens are removed from it.
        special_tokens: placed first, in this order.
        size: the maximum vocabulary size (entries in ``vocab.txt``).

    Returns:
        The vocabulary, index = token id.

    Raises:
        BertkitError: ``size`` is smaller than the special tokens plus the alphabet.
    """
    specials = set(special_tokens)
    body = list(dict.fromkeys(t for t in learned if t and t not in specials and t != PREFIX))
    required = alphabet_forms(body)
    minimum = len(special_tokens) + len(required)
    if size < minimum:
        raise BertkitError(
            f"--size {size} is smaller than the {len(special_tokens)} special tokens plus the "
            f"{len(required)} one-character tokens of the corpus alphabet",
            expected=f"--size of at least {minimum}, or a smaller --limit-alphabet")
    required_set = set(required)
    rest = [t for t in body if t not in required_set][:size - minimum]
    return list(special_tokens) + required + rest


@contextmanager
def tokenizers_parallelism() -> Iterator[None]:
    """Let ``tokenizers`` use all cores while training or tokenising a corpus (the CLI turns it
    off for fork safety; nothing is forked inside the block)."""
    old = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = old


def train_wordpiece(batches: Iterable[list[str]], *, size: int, uncased: bool,
                    special_tokens: Sequence[str], min_frequency: int = 2,
                    limit_alphabet: int | None = None, show_progress: bool = False) -> list[str]:
    """Train a WordPiece vocabulary with ``tokenizers``' ``WordPieceTrainer``.

    Args:
        batches: the corpus as batches of lines (see ``iter_corpus_batches``); consumed once.
        size: target vocabulary size, special tokens included.
        uncased: lower-case and strip accents before counting (BERT uncased); else keep both.
        special_tokens: reserved tokens, placed first.
        min_frequency: a merge must be seen at least this many times.
        limit_alphabet: keep at most this many characters (the rest become ``[UNK]``).
        show_progress: show the trainer's own progress bars on stderr.

    Returns:
        Learned tokens, most important first (special tokens first), before alphabet completion.

    Determinism: the trainer breaks ties between merges of equal count by token ids that it
    assigns in hash-map order, so on a small corpus (many ties) two runs can return a few
    different pieces (huggingface/tokenizers#1794, open as of tokenizers 0.23); large corpora
    rarely tie near the vocabulary's cut.

    Reference:
        Wu et al. (2016), sec. 4.1; Devlin et al. (2019), sec. 3.
    """
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=uncased, lowercase=uncased)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    kwargs = {} if limit_alphabet is None else {"limit_alphabet": limit_alphabet}
    trainer = trainers.WordPieceTrainer(vocab_size=size, min_frequency=min_frequency,
                                        special_tokens=list(special_tokens),
                                        continuing_subword_prefix=PREFIX,
                                        show_progress=show_progress, **kwargs)
    with tokenizers_parallelism():
        tok.train_from_iterator(batches, trainer)
    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.__getitem__)
