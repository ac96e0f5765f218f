"""``bertkit vocab build|compare|extend``: thin wrappers over :mod:`bertkit.vocab`, generated
from the settings declared in :mod:`bertkit.vocab.options`."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from bertkit.cli._app import app, user_errors
from bertkit.cli._tasks import declared_command
from bertkit.vocab.options import VocabBuildSettings, VocabCompareSettings, VocabExtendSettings

vocab_app = typer.Typer(
    help="WordPiece vocabularies: build one on a corpus (SciVocab-style), compare two, or "
         "extend a model's.",
    no_args_is_help=True)
app.add_typer(vocab_app, name="vocab")


def _build(s: VocabBuildSettings) -> None:
    from bertkit.vocab.build import build_vocab
    from bertkit.vocab.coverage import report_build

    info = build_vocab(s.corpus_paths, s.out, size=s.size, uncased=s.uncased,
                       algorithm=s.algorithm, min_frequency=s.min_frequency,
                       limit_alphabet=s.limit_alphabet, special_tokens=s.special_token_list,
                       skip_bad_lines=s.skip_bad_lines, overwrite=s.overwrite,
                       show_progress=s.progress, normalize=s.normalize.lower())
    report_build(info, s.out, Console(stderr=True))


def _compare(s: VocabCompareSettings) -> None:
    from bertkit.vocab.compare import compare_vocabs, render_comparison

    result = compare_vocabs(s.vocab_a, s.vocab_b, s.corpus, top=s.top,
                            skip_bad_lines=s.skip_bad_lines)
    if s.as_json:
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        render_comparison(result, Console())


def _extend(s: VocabExtendSettings) -> None:
    from bertkit.vocab.extend import extend_model

    info = extend_model(s.model, s.out, add=s.add, vocab=s.vocab, corpus=s.corpus,
                        skip_bad_lines=s.skip_bad_lines, overwrite=s.overwrite)
    sample = ", ".join(w["word"] for w in info["words"][:10])
    Console(stderr=True).print(
        f"[green]saved[/] {s.out}: {info['added']:,} words added "
        f"({info['old_size']:,} -> {info['new_size']:,} tokens), e.g. {sample}", highlight=False)


def _register(name: str, config_class: type, body, doc: str):
    fn = declared_command(config_class, body, doc)
    fn.__name__ = fn.__qualname__ = f"{name}_cli"
    return vocab_app.command(name)(user_errors(fn))


build_cli = _register("build", VocabBuildSettings, _build, """
    Train a WordPiece vocabulary on a corpus and save it as a BERT tokenizer directory.

    Then re-encode the corpus with it and report the coverage: the [UNK] rate and the
    characters left out of the alphabet with their counts (also in stats.json), with a warning
    when any piece is [UNK].

    On a small corpus two runs can differ in a few pieces: tokenizers' trainer breaks ties
    between equally frequent merges in hash-map order (huggingface/tokenizers#1794).
    """)
compare_cli = _register("compare", VocabCompareSettings, _compare, """
    Token overlap of VOCAB_A and VOCAB_B and, on a corpus, subwords per word, split share and
    [UNK] rate.""")
extend_cli = _register("extend", VocabExtendSettings, _extend, """
    Add up to N domain words the model splits, initialised from the pieces it used.""")
