"""The SentencePiece route: SentencePiece BPE on raw sentences, converted to WordPiece form.

This is how SciBERT built SciVocab: ``spm_train --model_type=bpe --vocab_size=31000
--character_coverage=0.9999`` on the raw corpus, then a conversion of the pieces to BERT's
``vocab.txt``. The differences from the default ``tokenizers`` WordPiece route:

* SentencePiece sees raw sentences (words marked by ``▁``) and does not split punctuation, so
  pieces that glue punctuation to letters (``"),"``, ``"(a"``) cannot occur after BERT's
  pre-tokeniser and are dropped in the conversion;
* bertkit keeps every character (``character_coverage=1.0``, where SciBERT used 0.9999, which
  turns rare symbols such as Greek letters into ``[UNK]`` on a small corpus); for corpora of more than
  ``input_sentence_size`` sentences SentencePiece trains on a random sample of them (that bounds
  its memory; the WordPiece route counts every word of the corpus instead);
* uncased mode lower-cases the sentences for SentencePiece; accents are stripped from the pieces
  afterwards with BERT's normaliser, and duplicates are merged.

Conversion: ``▁word`` -> ``word`` (word-initial), ``piece`` -> ``##piece`` (word-internal);
SentencePiece's score order is kept; the alphabet is completed as in the WordPiece route.

Reference:
    Kudo and Richardson (2018), SentencePiece; Beltagy et al. (2019), SciBERT, sec. 2;
    Sennrich et al. (2016), BPE.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from bertkit.errors import BertkitError
from bertkit.vocab.wordpiece import PREFIX, is_isolated_char

SPACE = "\u2581"  # SentencePiece's word-boundary mark


def sentencepiece_size(size: int, n_special: int) -> int:
    """SentencePiece's ``vocab_size`` for a target WordPiece size: ``size`` + 1/12 head room.

    The conversion drops about 4% of the pieces (punctuation glued to letters, accent
    duplicates in uncased mode): SciBERT's 31,000 pieces give about 29,900 WordPiece tokens
    on the shared corpus. With 1/12 head room (30,000 -> 32,495 pieces) the vocabulary is
    filled to ``size`` and cut there in SentencePiece's score order; the extra merges cost
    no measurable time.
    """
    return max(size - n_special + math.ceil(size / 12), 8)


def convert_pieces(pieces: Iterable[str], uncased: bool) -> list[str]:
    """Convert SentencePiece pieces (score order) to WordPiece tokens (same order).

    Args:
        pieces: SentencePiece pieces, ``▁`` marking a word start; control pieces excluded.
        uncased: normalise each piece with BERT's uncased normaliser (lower case, no accents).

    Returns:
        Unique WordPiece tokens; pieces that BERT's pre-tokeniser could never produce
        (whitespace inside, or an isolated character glued to others) are dropped, and an
        isolated character (punctuation, CJK) is always kept in its word-initial form.
    """
    from tokenizers.normalizers import BertNormalizer

    norm = BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=uncased,
                          lowercase=uncased)
    out: list[str] = []
    seen: set[str] = set()
    for piece in pieces:
        initial = piece.startswith(SPACE)
        text = piece.lstrip(SPACE)
        if uncased and not text.isascii():  # ASCII pieces are lower case already
            text = norm.normalize_str(text)
        if not text or any(ch.isspace() or ch == SPACE for ch in text):
            continue
        if len(text) > 1 and any(is_isolated_char(ch) for ch in text):
            continue
        isolated = len(text) == 1 and is_isolated_char(text)  # BERT makes it a word of its own
        token = text if initial or isolated else PREFIX + text
        if token not in seen:
            seen.add(token)
            out.append(token)
    return out


def _lower(batches: Iterable[list[str]], uncased: bool) -> Iterator[str]:
    for lines in batches:
        for line in lines:
            yield line.lower() if uncased else line


def train_sentencepiece(batches: Iterable[list[str]], *, size: int, uncased: bool,
                        special_tokens: Sequence[str], character_coverage: float = 1.0,
                        input_sentence_size: int = 10_000_000,
                        limit_alphabet: int | None = None, show_progress: bool = False) -> list[str]:
    """Train SentencePiece BPE on the corpus and return WordPiece tokens in score order.

    Args:
        batches: the corpus as batches of lines; consumed once.
        size: target WordPiece size (special tokens included); SentencePiece is asked for
            :func:`sentencepiece_size` pieces.
        uncased: lower-case sentences (accents are stripped in :func:`convert_pieces`).
        special_tokens: the reserved tokens (only their number matters here).
        character_coverage: share of characters SentencePiece must cover. SciBERT used
            0.9999, which drops characters rarer than about 1 in 10,000 (Greek letters and
            unit symbols included, on a small corpus); 1.0 keeps every character, as the
            WordPiece route does, so no known symbol becomes ``[UNK]``.
        input_sentence_size: at most this many sentences are sampled for training.
        limit_alphabet: not supported by SentencePiece (use ``character_coverage``).
        show_progress: let SentencePiece log its progress to stderr.

    Returns:
        WordPiece tokens (no special tokens), most important first.

    Raises:
        BertkitError: the ``sentencepiece`` package is missing, or training fails.

    Reference:
        Kudo and Richardson (2018); Beltagy et al. (2019), SciBERT, sec. 2.
    """
    try:
        import sentencepiece as spm
    except ImportError:
        raise BertkitError("--algorithm sentencepiece needs the sentencepiece package",
                           expected="`pip install sentencepiece`") from None
    if limit_alphabet is not None:
        raise BertkitError("--limit-alphabet applies to --algorithm wordpiece only",
                           expected="no --limit-alphabet with --algorithm sentencepiece")
    with tempfile.TemporaryDirectory(prefix="bertkit-spm-") as tmp:
        prefix = str(Path(tmp) / "spm")
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=_lower(batches, uncased), model_prefix=prefix,
                model_type="bpe", vocab_size=sentencepiece_size(size, len(special_tokens)),
                character_coverage=character_coverage, normalization_rule_name="identity",
                input_sentence_size=input_sentence_size, shuffle_input_sentence=True,
                max_sentence_length=1 << 16, hard_vocab_limit=False,
                bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0, unk_piece="<unk>",
                minloglevel=0 if show_progress else 2, num_threads=os.cpu_count() or 1)
        except RuntimeError as exc:
            raise BertkitError(f"SentencePiece training failed: {exc}") from None
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                  if not (sp.is_unknown(i) or sp.is_control(i))]
    return convert_pieces(pieces, uncased)

