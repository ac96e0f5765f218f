"""Inference helpers shared by ``evaluate``/``predict coref`` (:mod:`bertkit.tasks.coref.task`)
and the streaming predictor (:mod:`bertkit.tasks.coref.stream`): load a saved model, resolve
whole documents, write JSON lines, split text into words."""

from __future__ import annotations

import json
import re
from typing import Sequence

from bertkit.data.conll2012 import CorefDocument
from bertkit.encoders import load_tokenizer
from bertkit.inputs.lengths import fit_length, position_limit
from bertkit.tasks.coref.encoding import collate, encode_documents
from bertkit.tasks.coref.model import CorefModel, load_model
from bertkit.training.devices import make_runtime


def resolve_documents(model: CorefModel, tokenizer, docs: Sequence[CorefDocument], runtime,
                      max_length: int, batch_size: int = 1, singletons: bool = True,
                      encoded: list | None = None) -> list[list[list[tuple[int, int]]]]:
    """Clusters of every document (lists of ``(start, end)`` word mentions), whole documents,
    ``batch_size`` at a time."""
    if encoded is None:
        encoded, _ = encode_documents(docs, tokenizer, max_length)
    model.eval()
    model.to(runtime.device)
    out: list = []
    for k in range(0, len(encoded), batch_size):
        batch = runtime.to_device(collate(encoded[k:k + batch_size], tokenizer.pad_token_id))
        with runtime.autocast():
            out.extend(model.resolve(**batch, singletons=singletons))
    return out


def loaded(model_dir: str, device: str, precision: str, console):
    """``(model, meta, tokenizer, runtime, max_length)`` of the saved model in ``model_dir``.

    Raises:
        BertkitError: no saved coreference model there.
    """
    model, meta = load_model(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    runtime = make_runtime(device, precision, console)
    max_length = fit_length(meta.get("max_length", 384), position_limit(model.encoder.config),
                            console)
    return model, meta, tokenizer, runtime, max_length


def format_jsonl(docs: Sequence[CorefDocument], predicted, texts=None, offsets=None) -> str:
    """One JSON object a document: ``id``, ``clusters`` (each a list of mentions with ``start``
    and ``end`` character offsets, end exclusive, into ``text``, and ``text``), ``text``. For
    CoNLL input the text is the words joined by single spaces (the offsets point into it)."""
    lines = []
    for k, (doc, clusters) in enumerate(zip(docs, predicted)):
        if texts is None:
            words, pos, offs = doc.words, 0, []
            for w in words:
                offs.append((pos, pos + len(w)))
                pos += len(w) + 1
            text = " ".join(words)
        else:
            text, offs = texts[k], offsets[k]
        out = [[{"start": offs[s][0], "end": offs[e][1], "text": text[offs[s][0]:offs[e][1]]}
                for s, e in c] for c in clusters]
        lines.append(json.dumps({"id": doc.name, "clusters": out, "text": text},
                                ensure_ascii=False))
    return "\n".join(lines) + "\n"


def word_splitter(tokenizer):
    """``text -> [(word, (start, end))]``: the tokenizer's pre-tokenizer, else white space."""
    pre = tokenizer.backend_tokenizer.pre_tokenizer
    if pre:
        return pre.pre_tokenize_str
    return lambda t: [(m.group(0), (m.start(), m.end())) for m in re.finditer(r"\S+", t)]
