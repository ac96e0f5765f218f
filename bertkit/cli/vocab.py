"""``bertkit vocab build|compare|extend``: thin wrappers over :mod:`bertkit.vocab`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich.console import Console

from bertkit.cli import _options as opt
from bertkit.cli._app import app, user_errors

vocab_app = typer.Typer(
    help="WordPiece vocabularies: build one on a corpus (SciVocab-style), compare two, or "
         "extend a model's.",
    no_args_is_help=True)
app.add_typer(vocab_app, name="vocab")

CorpusOpt = Annotated[Optional[List[Path]], typer.Option(
    "--corpus", "-c", help="Text file, .gz file or directory of them (repeatable).")]
SkipBad = Annotated[bool, typer.Option(
    "--skip-bad-lines", help="Drop lines that are not UTF-8 (or binary) instead of failing.")]
Overwrite = Annotated[bool, typer.Option(
    "--overwrite", help="Replace an output directory that already exists.")]


@vocab_app.command("build")
@user_errors
def build_cli(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (vocab.txt, tokenizer files, stats.json).")],
    corpus: CorpusOpt = None,
    more: Annotated[Optional[List[Path]], typer.Argument(help="More corpus paths (as --corpus).", show_default=False)] = None,
    size: Annotated[int, typer.Option("--size", help="Vocabulary size, special tokens included.", min=1)] = 30000,
    uncased: Annotated[bool, typer.Option("--uncased/--cased", help="Lower-case and strip accents (uncased) or keep both (cased).")] = True,
    algorithm: Annotated[opt.Algorithm, typer.Option("--algorithm", help="wordpiece (tokenizers' trainer) or sentencepiece (SentencePiece BPE converted to WordPiece, SciBERT's route).")] = "wordpiece",
    min_frequency: Annotated[int, typer.Option("--min-frequency", help="Minimum count of a merge (wordpiece).", min=0)] = 2,
    limit_alphabet: Annotated[Optional[int], typer.Option("--limit-alphabet", help="Keep at most this many characters; the rarest others become [UNK] (wordpiece). \\[default: all]", min=1)] = None,
    special_tokens: Annotated[str, typer.Option("--special-tokens", help="Comma-separated special tokens, placed first; must include BERT's five.")] = "[PAD], [UNK], [CLS], [SEP], [MASK]",
    normalize: Annotated[opt.Normalization, typer.Option("--normalize", help="Unicode normalisation before BERT's normaliser, in training and in the saved tokenizer.json (AutoTokenizer applies it): none, nfc, nfkc, nfd or nfkd. BERT's normaliser alone keeps look-alikes apart: MICRO SIGN µ (U+00B5) vs Greek mu μ (U+03BC), ℃ vs °C, ² vs 2, ﬁ vs fi, full-width Ａ vs A (and, cased, ANGSTROM SIGN Å vs Å); nfkc maps each pair to one form, nfc only the canonical ones (Å -> Å).", case_sensitive=False)] = "none",
    skip_bad_lines: SkipBad = False,
    overwrite: Overwrite = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bars on stderr.")] = True,
) -> None:
    """Train a WordPiece vocabulary on a corpus and save it as a BERT tokenizer directory.

    Then re-encode the corpus with it and report the coverage: the [UNK] rate and the
    characters left out of the alphabet with their counts (also in stats.json), with a warning
    when any piece is [UNK].

    On a small corpus two runs can differ in a few pieces: tokenizers' trainer breaks ties
    between equally frequent merges in hash-map order (huggingface/tokenizers#1794).
    """
    from bertkit.vocab.build import build_vocab
    from bertkit.vocab.coverage import report_build

    paths = list(corpus or []) + list(more or [])
    tokens = [t for t in special_tokens.replace(",", " ").split() if t]
    info = build_vocab(paths, out, size=size, uncased=uncased, algorithm=algorithm,
                       min_frequency=min_frequency, limit_alphabet=limit_alphabet,
                       special_tokens=tokens, skip_bad_lines=skip_bad_lines,
                       overwrite=overwrite, show_progress=progress, normalize=normalize.lower())
    report_build(info, out, Console(stderr=True))


@vocab_app.command("compare")
@user_errors
def compare_cli(
    vocab_a: Annotated[str, typer.Argument(help="Vocabulary A: scivocab-uncased, scivocab-cased, minilm, a vocab.txt, a tokenizer/model directory or a hub id.")],
    vocab_b: Annotated[str, typer.Argument(help="Vocabulary B (same forms).")],
    corpus: CorpusOpt = None,
    top: Annotated[int, typer.Option("--top", help="Words A splits and B keeps whole to list.", min=0)] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")] = False,
    skip_bad_lines: SkipBad = False,
) -> None:
    """Token overlap of VOCAB_A and VOCAB_B and, on a corpus, subwords per word, split share and
    [UNK] rate."""
    from bertkit.vocab.compare import compare_vocabs, render_comparison

    result = compare_vocabs(vocab_a, vocab_b, corpus, top=top, skip_bad_lines=skip_bad_lines)
    if as_json:
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        render_comparison(result, Console())


@vocab_app.command("extend")
@user_errors
def extend_cli(
    model: Annotated[str, typer.Option("--model", "-m", help="Masked-LM model directory, minilm, or hub id.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (model + tokenizer, Hugging Face format).")],
    add: Annotated[int, typer.Option("--add", "-n", help="Most words to add.", min=1)],
    vocab: Annotated[Optional[str], typer.Option("--vocab", help="Take the words from this vocabulary (e.g. scivocab-uncased).")] = None,
    corpus: CorpusOpt = None,
    skip_bad_lines: SkipBad = False,
    overwrite: Overwrite = False,
) -> None:
    """Add up to N domain words the model splits, initialised from the pieces it used."""
    from bertkit.vocab.extend import extend_model

    info = extend_model(model, out, add=add, vocab=vocab, corpus=corpus,
                        skip_bad_lines=skip_bad_lines, overwrite=overwrite)
    sample = ", ".join(w["word"] for w in info["words"][:10])
    Console(stderr=True).print(
        f"[green]saved[/] {out}: {info['added']:,} words added "
        f"({info['old_size']:,} -> {info['new_size']:,} tokens), e.g. {sample}", highlight=False)
