"""``predict ner`` through the shared streaming driver (:mod:`bertkit.predict`): the model is
loaded once, and each chunk of records (plain-text lines or CoNLL sentences) becomes one output
per record, in input order.

Output per record, as :func:`bertkit.data.conll.format_conll` and the JSON lines of
``predict ner`` have always been: CoNLL rows ``token [gold] predicted`` (a blank line between
sentences), or one JSON object per sentence (``line``, ``tokens``, ``tags``, ``spans``); from
plain text a line with nothing visible gives the JSON record ``"empty": true``, a skipped
unreadable line the record ``"skipped": reason``; in CoNLL output both are a block of one comment
line, ``# line N: empty`` or ``# line N: skipped: reason`` (:func:`conll_marker`), so that every
input line has its block and line-aligned outputs stay aligned. A CoNLL input's gold column is
copied as the input has it (a streamed file's tagging scheme cannot be detected from the whole
file first).
"""

from __future__ import annotations

import json
from typing import Callable

from rich.console import Console

from bertkit.data.conll import Sentence, conll_lines
from bertkit.data.text import visible
from bertkit.encoders import load_tokenizer
from bertkit.errors import BertkitError
from bertkit.inputs.lengths import fit_length, position_limit
from bertkit.predict.driver import StreamPredictor
from bertkit.predict.records import Record, head_lines
from bertkit.tasks.ner.model import load_tagger
from bertkit.tasks.ner.spans import sentence_spans
from bertkit.training.devices import make_runtime


def check_formats(fmt: str, input_format: str) -> None:
    """Raises BertkitError for an unknown output or input format."""
    if fmt not in ("conll", "jsonl"):
        raise BertkitError(f"unknown output format '{fmt}'", expected="conll or jsonl")
    if input_format not in ("auto", "conll", "text"):
        raise BertkitError(f"unknown input format '{input_format}'", expected="auto, conll or text")


def ner_predictor(model_dir: str, input_path: str, fmt: str, input_format: str, device: str,
                  precision: str, batch_size: int, console: Console | None,
                  tag: Callable) -> StreamPredictor:
    """The :class:`~bertkit.predict.driver.StreamPredictor` of a saved NER model.

    Args:
        tag: :func:`bertkit.tasks.ner.task.tag_sentences` (sentences -> IOB2 tags per word;
            sorts each chunk's windows by length for its batches).

    Raises:
        BertkitError: unknown format, or no saved NER model in ``model_dir``.
    """
    check_formats(fmt, input_format)
    tagger, meta = load_tagger(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    runtime = make_runtime(device, precision, console)
    max_length = fit_length(meta.get("max_length", 512), position_limit(tagger.encoder.config),
                            console)
    pre = tokenizer.backend_tokenizer.pre_tokenizer
    is_conll = conll_lines(head_lines(input_path)) if input_format == "auto" \
        else input_format == "conll"

    def sentence(rec: Record) -> Sentence | None:
        if is_conll:
            return Sentence([c[0] for _, c in rec.rows],
                            [c[-1] for _, c in rec.rows] if len(rec.rows[0][1]) > 1 else [],
                            input_path, rec.line)
        words = [w for w, _ in pre.pre_tokenize_str(rec.text)]
        if not any(visible(w) for w in words):
            return None  # nothing a model could read: an "empty" record
        return Sentence(words, [], input_path, rec.line, one_line=True)

    def predict(records: list[Record]) -> list[str | None]:
        sents = [sentence(r) for r in records]
        real = [s for s in sents if s is not None]
        tags = iter(tag(tagger, tokenizer, real, runtime, max_length, batch_size, console)
                    if real else [])
        return [_format(s, next(tags), fmt) if s is not None else
                (_json({"line": r.line, "tokens": [], "tags": [], "spans": [], "empty": True})
                 if fmt == "jsonl" else conll_marker(r.line, "empty"))
                for r, s in zip(records, sents)]

    return StreamPredictor(
        "conll" if is_conll else "text", predict, meta["path"],
        separator="\n" if fmt == "conll" else "",
        skipped=(lambda r: _json({"line": r.line, "skipped": r.bad})) if fmt == "jsonl"
        else (lambda r: conll_marker(r.line, f"skipped: {r.bad}")),
        settings={"task": "ner", "fmt": fmt, "input": "conll" if is_conll else "text"})
    # batch size and --batch-tokens are not settings: they change the speed, not the output


def conll_marker(line: int, what: str) -> str:
    """The CoNLL block standing for input line ``line`` that has no tokens: one comment line,
    ``# line 7: empty`` or ``# line 9: skipped: not valid UTF-8 ...`` (a streamed CoNLL input
    reads such a line as a sentence boundary, :data:`bertkit.predict.records.MARKER`)."""
    return f"# line {line}: {what}\n"


def _json(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _format(s: Sentence, pred: list[str], fmt: str) -> str:
    if fmt == "jsonl":
        return _json({"line": s.line, "tokens": s.tokens, "tags": pred,
                      "spans": sentence_spans(s.tokens, pred)})
    return "\n".join("\t".join([tok] + ([s.tags[i]] if s.tags else []) + [pred[i]])
                     for i, tok in enumerate(s.tokens)) + "\n"
