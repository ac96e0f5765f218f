"""Build, save and load the relation classifier.

Two saved forms, chosen by the pooling:

* ``cls`` (the default): the architecture's own ``*ForSequenceClassification`` (for BERT,
  ``BertForSequenceClassification``: ``[CLS]`` state -> pooler (dense + tanh) -> dropout -> linear,
  SciBERT's ChemProt classifier, Beltagy et al., 2019). The saved ``model/`` loads with
  ``AutoModelForSequenceClassification.from_pretrained(path)`` and
  ``pipeline("text-classification", model=path)``: no remote code, no bertkit.
* ``entity-start``: :class:`~bertkit.heads.relation.BertForRelationClassification` (states at
  ``[E1]`` and ``[E2]``), which no standard class computes; its saved ``model/`` carries
  ``relation.py`` and loads with ``trust_remote_code=True``.

Either way the tokenizer holds the markers as added special tokens and the config holds
``id2label``/``label2id``, so text marked ``[E1] … [/E1] … [E2] … [/E2]`` is classified as bertkit
does. Runs saved before the ``cls`` form changed (``BertForRelationClassification`` with ``cls``
pooling, no pooler) still load and predict through :func:`load_relation_model`.
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
CUSTOM_CLASS = BertForRelationClassification.__name__


def portable(pooling: str) -> bool:
    """Whether a model with this pooling saves as a standard Hugging Face class (``cls`` only)."""
    return pooling == "cls"


def portability_note(pooling: str) -> str:
    """One line for the run output: how the saved ``model/`` loads outside bertkit."""
    if portable(pooling):
        return ("model/ is a standard AutoModelForSequenceClassification (no remote code): "
                "pipeline(\"text-classification\") takes text marked [E1] … [/E1] … [E2] … [/E2]")
    return (f"model/ uses custom code for {pooling} pooling (relation.py): load it with "
            f"trust_remote_code=True; --pooling cls saves a standard class")


def _drop_entity_pos(module, args, kwargs):
    """Forward pre-hook: bertkit's batches carry ``entity_pos`` ``[B, 2]``, which only the
    ``entity-start`` model uses; a standard ``*ForSequenceClassification`` would pass it on to the
    encoder's attention as an unknown keyword."""
    kwargs.pop("entity_pos", None)
    return args, kwargs


def accept_relation_batches(model):
    """Let a standard sequence classifier take bertkit's RE batches (see :func:`_drop_entity_pos`).

    Returns:
        ``model`` itself (the hook is not saved: :func:`load_relation_model` adds it again).
    """
    if not isinstance(model, BertForRelationClassification):
        model.register_forward_pre_hook(_drop_entity_pos, with_kwargs=True)
    return model


def legacy_cls_checkpoint(run_dir: str | Path | None) -> bool:
    """Whether the newest checkpoint in ``run_dir/checkpoints`` holds a ``cls`` model of the old
    custom form (a classifier and no pooler), which ``--resume`` must rebuild as it was."""
    import torch

    from bertkit.training.checkpoint import list_checkpoints

    if run_dir is None:
        return False
    found = list_checkpoints(Path(run_dir) / "checkpoints")
    if not found:
        return False
    try:
        keys = torch.load(found[-1] / "model.pt", map_location="cpu", weights_only=True, mmap=True)
    except (OSError, RuntimeError):
        return False  # the loop reports an unreadable checkpoint itself
    return "classifier.weight" in keys and not any(k.startswith("bert.pooler.") for k in keys)


def build_relation_model(model_name: str, labels: Sequence[str], pooling: str,
                         markers: MarkerSet, resume_dir: str | Path | None = None):
    """A new classifier from a pretrained encoder, with the markers added and embeddings resized.

    Args:
        model_name: encoder directory or hub id; any architecture with a
            ``*ForSequenceClassification`` class for ``cls`` pooling, a BERT-architecture model for
            ``entity-start``.
        labels: the C relation labels, in id order.
        pooling: ``cls`` (a standard ``AutoModelForSequenceClassification``) or ``entity-start``.
        markers: the marker strings to add to the tokenizer.
        resume_dir: the run directory a ``--resume`` continues: when its checkpoint holds the
            pre-issue-18 ``cls`` model (custom class, no pooler), that model is built again so the
            checkpoint loads (:func:`legacy_cls_checkpoint`).

    Returns:
        (model, tokenizer with the markers, ``{marker: id}``). The model takes bertkit's batches
        (``input_ids``/``attention_mask`` ``[B, T]``, ``labels`` ``[B]``, ``entity_pos`` ``[B, 2]``)
        and returns ``loss`` (mean cross-entropy) and ``logits`` ``[B, C]``.

    Raises:
        BertkitError: the encoder cannot be loaded, ``pooling`` is unknown, or ``entity-start`` is
            asked of a non-BERT encoder.
    """
    from transformers import AutoConfig, AutoModelForSequenceClassification

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
    config.num_labels = len(labels)
    config.id2label, config.label2id = id2label, {v: k for k, v in id2label.items()}
    legacy = portable(pooling) and legacy_cls_checkpoint(resume_dir)
    if portable(pooling) and not legacy:
        config.problem_type = "single_label_classification"
        try:
            model = AutoModelForSequenceClassification.from_pretrained(
                model_name, config=config, attn_implementation="sdpa")
        except LOAD_ERRORS as exc:
            raise BertkitError(f"cannot load model '{model_name}' for sequence classification: "
                               f"{_short(exc)}", expected="an encoder with a "
                               "*ForSequenceClassification class in transformers") from None
    else:
        if config.model_type != "bert":
            raise BertkitError(f"{pooling} pooling needs a BERT-architecture encoder; "
                               f"'{model_name}' is '{config.model_type}'",
                               expected="a BERT, SciBERT, BioBERT, PubMedBERT or MiniLM model, "
                                        "or --pooling cls")
        config.relation_pooling = pooling
        config.subject_start_ids = [marker_ids[m] for m in markers.openers(1)]
        config.object_start_ids = [marker_ids[m] for m in markers.openers(2)]
        config.relation_markers = markers.tokens()
        BertForRelationClassification.register_for_auto_class("AutoModelForSequenceClassification")
        model = BertForRelationClassification.from_pretrained(model_name, config=config,
                                                              attn_implementation="sdpa")
    if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    return accept_relation_batches(model), tokenizer, marker_ids


def model_pooling(model) -> str:
    """The pooling of a model from :func:`build_relation_model` or :func:`load_relation_model`."""
    if isinstance(model, BertForRelationClassification):
        return model.pooling
    return "cls"


def save_relation_model(model, tokenizer, directory: Path, meta: dict) -> None:
    """Write the Hugging Face model (+ ``relation.py`` for custom pooling), the tokenizer with the
    markers, and ``bertkit.json`` (``meta`` plus task, labels in id order and pooling)."""
    directory.mkdir(parents=True, exist_ok=True)
    if isinstance(model, BertForRelationClassification):
        BertForRelationClassification.register_for_auto_class("AutoModelForSequenceClassification")
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    meta = {**meta, "task": "re", "labels": [model.config.id2label[i]
                                             for i in range(model.config.num_labels)],
            "pooling": model_pooling(model)}
    (directory / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def load_relation_model(directory: str | Path):
    """Load what :func:`save_relation_model` wrote (a run directory or its ``model/``), in either
    form, including runs saved before ``cls`` pooling became a standard class.

    Returns:
        (model in eval mode, tokenizer, labels in id order, :class:`MarkerSet`, ``{marker: id}``,
        meta with ``path``).

    Raises:
        BertkitError: no saved bertkit RE model there, or its files cannot be loaded.
    """
    from transformers import AutoConfig, AutoModelForSequenceClassification

    quiet_transformers()
    path = Path(directory).expanduser()
    if (path / "model" / META_FILE).is_file():
        path = path / "model"
    meta_file = path / META_FILE
    if not meta_file.is_file() or json.loads(meta_file.read_text(encoding="utf-8")).get("task") != "re":
        raise BertkitError("no saved bertkit relation-extraction model here", file=path,
                           expected=f"a run directory of 'finetune re' (model/{META_FILE})")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    try:
        config = AutoConfig.from_pretrained(path)
        if CUSTOM_CLASS in (getattr(config, "architectures", None) or []):
            model = BertForRelationClassification.from_pretrained(path, attn_implementation="sdpa")
        else:
            model = AutoModelForSequenceClassification.from_pretrained(
                path, attn_implementation="sdpa")
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load the saved model: {_short(exc)}", file=path,
                           expected="the model/ folder bertkit saved (complete, not truncated)"
                           ) from None
    accept_relation_batches(model).eval()
    tokenizer = load_tokenizer(str(path))
    markers = MarkerSet(tuple(meta.get("entity_types", ())))
    marker_ids = {m: tokenizer.convert_tokens_to_ids(m) for m in markers.tokens()}
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    meta["path"] = str(path)
    return model, tokenizer, labels, markers, marker_ids, meta
