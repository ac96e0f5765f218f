"""Vocabularies: build a WordPiece vocabulary on a corpus, compare two, extend a model's.

``build_vocab`` (``bertkit vocab build``), ``compare_vocabs`` (``bertkit vocab compare``) and
``extend_model`` (``bertkit vocab extend``); ``resolve_vocab`` maps ``scivocab-uncased`` /
``scivocab-cased`` to the vocabularies shipped in the top-level ``vocab/`` folder.

Reference:
    Beltagy et al. (2019), SciBERT, sec. 2 (SciVocab); Wu et al. (2016) and Devlin et al.
    (2019) (WordPiece).
"""

from bertkit.vocab.build import build_vocab
from bertkit.vocab.compare import compare_vocabs
from bertkit.vocab.extend import extend_model
from bertkit.vocab.registry import load_tokenizer, resolve_vocab

__all__ = ["build_vocab", "compare_vocabs", "extend_model", "load_tokenizer", "resolve_vocab"]
