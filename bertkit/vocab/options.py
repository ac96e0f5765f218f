"""The settings of ``bertkit vocab build|compare|extend``, declared once.

Each field that is a command-line option or argument carries its :func:`bertkit.settings.options.option`
metadata (help, flags, choices, minimum; ``positional`` for an argument), and
:func:`bertkit.cli._tasks.declared_command` generates the command from the class, so the
``--help`` defaults are these defaults by construction. A field without a default is required.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.settings.options import option
from bertkit.vocab.build import ALGORITHMS
from bertkit.vocab.coverage import NORMALIZATIONS

CORPUS_HELP = "Text file, .gz file or directory of them (repeatable)."
SKIP_BAD_LINES_HELP = "Drop lines that are not UTF-8 (or binary) instead of failing."
OVERWRITE_HELP = "Replace an output directory that already exists."
NORMALIZE_HELP = (
    "Unicode normalisation before BERT's normaliser, in training and in the saved tokenizer.json "
    "(AutoTokenizer applies it): none, nfc, nfkc, nfd or nfkd. BERT's normaliser alone keeps "
    "look-alikes apart: MICRO SIGN µ (U+00B5) vs Greek mu μ (U+03BC), ℃ vs °C, ² vs 2, ﬁ vs fi, "
    "full-width Ａ vs A (and, cased, ANGSTROM SIGN Å vs Å); nfkc maps each pair to one form, nfc "
    "only the canonical ones (Å -> Å).")


@dataclass(kw_only=True)
class VocabBuildSettings:
    """``bertkit vocab build``: :func:`bertkit.vocab.build.build_vocab`'s settings."""

    out: Path = option(help="Output directory (vocab.txt, tokenizer files, stats.json).",
                       flags=("--out", "-o"))
    corpus: list[Path] | None = option(None, help=CORPUS_HELP, flags=("--corpus", "-c"),
                                       repeat=True, type=Path)
    more: list[Path] | None = option(None, help="More corpus paths (as --corpus).",
                                     positional=True, repeat=True, type=Path)
    size: int = option(30000, help="Vocabulary size, special tokens included.", min=1)
    uncased: bool = option(True, help="Lower-case and strip accents (uncased) or keep both "
                                      "(cased).", flags=("--uncased/--cased",))
    algorithm: str = option("wordpiece", help="wordpiece (tokenizers' trainer) or sentencepiece "
                            "(SentencePiece BPE converted to WordPiece, SciBERT's route).",
                            choices=ALGORITHMS)
    min_frequency: int = option(2, help="Minimum count of a merge (wordpiece).", min=0)
    limit_alphabet: int | None = option(
        None, help="Keep at most this many characters; the rarest others become [UNK] "
                   "(wordpiece).", min=1, shown="all")
    special_tokens: str = option("[PAD], [UNK], [CLS], [SEP], [MASK]",
                                 help="Comma-separated special tokens, placed first; must "
                                      "include BERT's five.")
    normalize: str = option("none", help=NORMALIZE_HELP, choices=NORMALIZATIONS,
                            case_sensitive=False)
    skip_bad_lines: bool = option(False, help=SKIP_BAD_LINES_HELP, flags=("--skip-bad-lines",))
    overwrite: bool = option(False, help=OVERWRITE_HELP, flags=("--overwrite",))
    progress: bool = option(True, help="Progress bars on stderr.",
                            flags=("--progress/--no-progress",))

    @property
    def corpus_paths(self) -> list[Path]:
        """``--corpus`` paths, then the positional ones."""
        return list(self.corpus or []) + list(self.more or [])

    @property
    def special_token_list(self) -> list[str]:
        """``special_tokens`` split at commas and spaces (``[PAD], [UNK]`` -> two tokens)."""
        return [t for t in self.special_tokens.replace(",", " ").split() if t]


@dataclass(kw_only=True)
class VocabCompareSettings:
    """``bertkit vocab compare``: :func:`bertkit.vocab.compare.compare_vocabs`'s settings."""

    vocab_a: str = option(help="Vocabulary A: scivocab-uncased, scivocab-cased, minilm, a "
                               "vocab.txt, a tokenizer/model directory or a hub id.",
                          positional=True)
    vocab_b: str = option(help="Vocabulary B (same forms).", positional=True)
    corpus: list[Path] | None = option(None, help=CORPUS_HELP, flags=("--corpus", "-c"),
                                       repeat=True, type=Path)
    top: int = option(20, help="Words A splits and B keeps whole to list.", min=0)
    as_json: bool = option(False, help="Print JSON on stdout instead of tables.",
                           flags=("--json",))
    skip_bad_lines: bool = option(False, help=SKIP_BAD_LINES_HELP, flags=("--skip-bad-lines",))


@dataclass(kw_only=True)
class VocabExtendSettings:
    """``bertkit vocab extend``: :func:`bertkit.vocab.extend.extend_model`'s settings."""

    model: str = option(help="Masked-LM model directory, minilm, or hub id.",
                        flags=("--model", "-m"))
    out: Path = option(help="Output directory (model + tokenizer, Hugging Face format).",
                       flags=("--out", "-o"))
    add: int = option(help="Most words to add.", flags=("--add", "-n"), min=1)
    vocab: str | None = option(None, help="Take the words from this vocabulary (e.g. "
                                          "scivocab-uncased).")
    corpus: list[Path] | None = option(None, help=CORPUS_HELP, flags=("--corpus", "-c"),
                                       repeat=True, type=Path)
    skip_bad_lines: bool = option(False, help=SKIP_BAD_LINES_HELP, flags=("--skip-bad-lines",))
    overwrite: bool = option(False, help=OVERWRITE_HELP, flags=("--overwrite",))
