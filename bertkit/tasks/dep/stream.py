"""``predict dep`` through the shared streaming driver (:mod:`bertkit.predict`): CoNLL-U
sentence blocks or plain-text lines, a chunk at a time, each with the CoNLL-U block
``predict dep`` has always written (HEAD and DEPREL filled in, every other byte as read; for
text a ``# text =`` comment and one word line a word).

Every input line is accounted for: from plain text a line with nothing visible gives the block
``# line N: empty``, and with ``--skip-bad-lines`` an unreadable line (or, from CoNLL-U, a
malformed sentence) gives ``# line N: skipped: reason``; such comment-only blocks are passed
through unchanged when the output is parsed again.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from bertkit.data.conllu import format_conllu, parse_conllu, text_sentences
from bertkit.data.text import visible
from bertkit.encoders import load_tokenizer
from bertkit.errors import BertkitError
from bertkit.inputs.lengths import fit_length, position_limit
from bertkit.predict.driver import StreamPredictor
from bertkit.predict.records import MARKER, Record, open_binary
from bertkit.tasks.dep.model import DECODERS, load_parser
from bertkit.tasks.dep.parse import parse_sentences
from bertkit.training.devices import make_runtime

EXPECTED = ("CoNLL-U sentences (10 tab-separated columns; HEAD/DEPREL may be _) or one "
            "sentence a line")


def marker(line: int, what: str) -> str:
    """The block standing for input line ``line`` without a sentence: ``# line N: what``."""
    return f"# line {line}: {what}\n\n"


def stream_format(input_path: str, input_format: str) -> str:
    """``conllu`` or ``text``: ``auto`` is CoNLL-U when the first line that is neither blank nor
    a comment has 10 tab-separated columns (or, with none in the first 64 KiB, by the name).

    Raises:
        BertkitError: an unknown input format, or a missing input.
    """
    if input_format not in ("auto", "conllu", "text"):
        raise BertkitError(f"unknown input format '{input_format}'",
                           expected="auto, conllu or text")
    if input_format != "auto":
        return input_format
    with open_binary(input_path) as handle:
        head = handle.read(1 << 16).decode("utf-8", errors="replace").lstrip("\ufeff")
    for line in head.split("\n"):
        if line.strip() and not line.startswith("#"):
            return "conllu" if len(line.rstrip("\r").split("\t")) == 10 else "text"
    name = input_path[:-3] if input_path.endswith(".gz") else input_path
    return "conllu" if Path(name).suffix in (".conllu", ".conll") else "text"


def dep_predictor(model_dir: str, input_path: str, input_format: str = "auto",
                  device: str = "auto", precision: str = "auto", batch_size: int = 64,
                  decoder: str | None = None, console: Console | None = None) -> StreamPredictor:
    """The :class:`~bertkit.predict.driver.StreamPredictor` of a saved dependency parser.

    Raises:
        BertkitError: unknown format or decoder, or no saved parser in ``model_dir``.
    """
    fmt = stream_format(input_path, input_format)
    if decoder is not None and decoder not in DECODERS:
        raise BertkitError(f"unknown decoder '{decoder}'", expected="mst or eisner")
    parser, meta = load_parser(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    runtime = make_runtime(device, precision, console)
    max_length = fit_length(meta.get("max_length", 512), position_limit(parser.encoder.config),
                            console)
    pre = tokenizer.backend_tokenizer.pre_tokenizer
    split = pre.pre_tokenize_str if pre else str.split
    decode_with = decoder or meta.get("decoder", "mst")

    def check(rec: Record) -> str | None:
        if fmt == "text":
            sents = text_sentences([rec.text], split, input_path) if rec.text.strip() else []
            if sents and any(visible(w) for w in sents[0].words):
                sents[0].line = rec.line
                rec.item = sents[0]
            return None  # else an "empty" block
        lines = [cols[0] for _, cols in rec.rows]
        if all(MARKER.match(x) for x in lines):
            rec.item = "\n".join(lines) + "\n\n"  # a block this command wrote for a line
            return None
        try:
            rec.item = parse_conllu("\n".join(lines), input_path, labelled=False,
                                    first_line=rec.line)[0]
        except BertkitError as exc:
            return exc.message if exc.line is None else f"line {exc.line}: {exc.message}"
        return None

    def predict(records: list[Record]) -> list[str | None]:
        sents = [r.item for r in records if r.item is not None and not isinstance(r.item, str)]
        heads, rels = parse_sentences(parser, tokenizer, sents, runtime, max_length, batch_size,
                                      decode_with, meta.get("word_repr", "first"), console) \
            if sents else ([], [])
        out = iter(range(len(sents)))
        result: list[str | None] = []
        for r in records:
            if r.item is None:
                result.append(marker(r.line, "empty"))
            elif isinstance(r.item, str):
                result.append(r.item)
            else:
                k = next(out)
                result.append(format_conllu([r.item], [heads[k]], [rels[k]]))
        return result

    return StreamPredictor(
        fmt, predict, meta["path"], check=check, expected=EXPECTED,
        skipped=lambda r: marker(r.line, f"skipped: {r.bad}"),
        settings={"task": "dep", "input": fmt, "decoder": decode_with})
