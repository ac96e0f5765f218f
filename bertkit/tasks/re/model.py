"""Build, save and load the relation classifier (:mod:`bertkit.heads.relation`).

The saved ``model/`` holds the weights and config (with ``auto_map``), the tokenizer with the
markers as special tokens, ``relation.py`` (the model code, copied by ``save_pretrained``) and
``bertkit.json``. It loads with ``AutoTokenizer.from_pretrained(path)`` and
``AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True)``; fed text
marked with ``[E1] … [/E1]`` and ``[E2] … [/E2]`` it finds the markers itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from bertkit.encoders import (LOAD_ERRORS, _short, load_tokenizer, quiet_transformers,
                              resolve_model_source)
from bertkit.errors import BertkitError
from bertkit.heads.relation import POOLINGS, BertForRelationClassification
from bertkit.tasks.re.encoding import MarkerSet, add_markers

META_FILE = "bertkit.json"


def build_relation_model(model_name: str, labels: Sequence[str], pooling: str,
                         markers: MarkerSet):
    """A new classifier from a pretrained BERT encoder, with the markers added and embeddings resized.

    Returns:
        (model, tokenizer with the markers, ``{marker: id}``).

    Raises:
        BertkitError: the encoder cannot be loaded, is not a BERT-architecture model, or
            ``pooling`` is unknown.
    """
    from transformers import AutoConfig

    if pooling not in POOLINGS:
        raise BertkitError(f"unknown pooling '{pooling}'", expected=" or ".join(POOLINGS))
    quiet_transformers()
    model_name = resolve_model_source(model_name)
    tokenizer = load_tokenizer(model_name)
    marker_ids = add_markers(tokenizer, markers)
    id2label = dict(enumerate(labels))
    try:
        config = AutoConfig.from_pretrained(model_name)
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load model '{model_name}': {_short(exc)}",
                           expected="a directory saved with save_pretrained, or a hub id "
                                    "where the hub can be reached") from None
    if config.model_type != "bert":
        raise BertkitError(f"relation extraction needs a BERT-architecture encoder; "
                           f"'{model_name}' is '{config.model_type}'",
                           expected="a BERT, SciBERT, BioBERT, PubMedBERT or MiniLM model")
    config.num_labels = len(labels)
    config.id2label, config.label2id = id2label, {v: k for k, v in id2label.items()}
    config.relation_pooling = pooling
    config.subject_start_ids = [marker_ids[m] for m in markers.openers(1)]
    config.object_start_ids = [marker_ids[m] for m in markers.openers(2)]
    config.relation_markers = markers.tokens()
    BertForRelationClassification.register_for_auto_class("AutoModelForSequenceClassification")
    model = BertForRelationClassification.from_pretrained(model_name, config=config,
                                                          attn_implementation="sdpa")
    if len(tokenizer) > model.config.vocab_size:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    return model, tokenizer, marker_ids


def save_relation_model(model, tokenizer, directory: Path, meta: dict) -> None:
    """Write the Hugging Face model (+ ``relation.py``), the tokenizer and ``bertkit.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    BertForRelationClassification.register_for_auto_class("AutoModelForSequenceClassification")
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    meta = {**meta, "task": "re", "labels": [model.config.id2label[i]
                                             for i in range(model.config.num_labels)],
            "pooling": model.config.relation_pooling}
    (directory / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def load_relation_model(directory: str | Path):
    """Load what :func:`save_relation_model` wrote (a run directory or its ``model/``).

    Returns:
        (model in eval mode, tokenizer, labels in id order, :class:`MarkerSet`, ``{marker: id}``,
        meta with ``path``).

    Raises:
        BertkitError: no saved bertkit RE model there.
    """
    quiet_transformers()
    path = Path(directory).expanduser()
    if (path / "model" / META_FILE).is_file():
        path = path / "model"
    meta_file = path / META_FILE
    if not meta_file.is_file() or json.loads(meta_file.read_text(encoding="utf-8")).get("task") != "re":
        raise BertkitError("no saved bertkit relation-extraction model here", file=path,
                           expected=f"a run directory of 'finetune re' (model/{META_FILE})")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    model = BertForRelationClassification.from_pretrained(path, attn_implementation="sdpa")
    model.eval()
    tokenizer = load_tokenizer(str(path))
    markers = MarkerSet(tuple(meta.get("entity_types", ())))
    marker_ids = {m: tokenizer.convert_tokens_to_ids(m) for m in markers.tokens()}
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    meta["path"] = str(path)
    return model, tokenizer, labels, markers, marker_ids, meta
