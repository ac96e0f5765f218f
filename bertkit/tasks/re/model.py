"""Build, save and load the relation classifier.

Training uses :class:`~bertkit.heads.relation.BertForRelationClassification` for a BERT encoder:
``cls`` pooling feeds the final ``[CLS]`` state to dropout and a linear layer (Beltagy et al., 2019,
sec. 3.2: "the final BERT vector for the [CLS] token" into a linear classification layer), and
``entity-start`` the states at ``[E1]`` and ``[E2]`` (Baldini Soares et al., 2019).

Saved forms:

* ``cls`` (the default): a standard ``BertForSequenceClassification`` (:func:`to_sequence_classifier`):
  its pooler is set to a near-identity (``tanh(a x) / a = x (1 - (a x)^2 / 3 + ...)``, ``a =
  1e-5``) and the classifier rescaled by ``1 / a``, so it computes the trained model's logits (to
  ~1e-6 relative) while loading with ``AutoModelForSequenceClassification.from_pretrained(path)``
  and ``pipeline("text-classification", model=path)``: no remote code, no bertkit. Training the
  standard class directly (through the checkpoint's pooler) scored 21.5 dev micro-F1 points lower
  on a short ChemProt run with the packaged MiniLM (``benchmarks/results/re_vs_stock/re_cls_export.log``).
  Another architecture with ``cls`` pooling trains its own ``*ForSequenceClassification``
  directly.
* ``entity-start``: the custom class, which no standard class computes; its ``model/`` carries
  ``relation.py`` and loads with ``trust_remote_code=True``.

Either way the tokenizer holds the markers as added special tokens and the config holds
``id2label``/``label2id``, so text marked ``[E1] … [/E1] … [E2] … [/E2]`` is classified as bertkit
does. Runs saved before (``BertForRelationClassification`` with ``cls`` pooling and remote code)
still load and predict through :func:`load_relation_model`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
from torch import nn

from bertkit.encoders import (LOAD_ERRORS, _short, attention_implementation, from_pretrained,
                              load_tokenizer, quiet_transformers, resolve_model_source)
from bertkit.errors import BertkitError
from bertkit.heads.relation import POOLINGS, BertForRelationClassification
from bertkit.tasks.re.encoding import MarkerSet, add_markers
from bertkit.tasks.common import find_saved_model, load_pretrained, write_saved_model

CUSTOM_CLASS = BertForRelationClassification.__name__


class WeightedRelationLoss(nn.Module):
    """A relation classifier trained with a class-weighted cross-entropy (``--class-weights
    balanced``, the weights of :func:`bertkit.tasks.common.balanced_weights`). Only training
    wraps the model; what is saved and predicts is the inner model (:func:`unwrap`).

    Args:
        model: the relation classifier of :func:`build_relation_model`.
        weight: ``[C]`` per-label loss weights, in label-id order.
    """

    def __init__(self, model: nn.Module, weight: torch.Tensor) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("weight", weight.float(), persistent=False)

    def forward(self, labels=None, **batch) -> dict:
        """Logits ``[B, C]`` of the inner model on ``batch`` (``input_ids``/``attention_mask``
        ``[B, T]``, ``entity_pos`` ``[B, 2]``) and, with ``labels`` ``[B]``, the mean weighted
        cross-entropy (``sum_i w[y_i] CE_i / sum_i w[y_i]``, as ``torch``'s ``weight``)."""
        logits = self.model(**batch).logits
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = nn.functional.cross_entropy(logits.float(), labels, weight=self.weight)
        return out


def unwrap(model: nn.Module) -> nn.Module:
    """The relation classifier inside a :class:`WeightedRelationLoss` (else ``model``)."""
    return model.model if isinstance(model, WeightedRelationLoss) else model


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


def build_relation_model(model_name: str, labels: Sequence[str], pooling: str,
                         markers: MarkerSet):
    """A new classifier from a pretrained encoder, with the markers added and embeddings resized.

    Args:
        model_name: encoder directory or hub id: a BERT-architecture model, or for ``cls``
            pooling any architecture with a ``*ForSequenceClassification`` class.
        labels: the C relation labels, in id order.
        pooling: ``cls`` or ``entity-start``.
        markers: the marker strings to add to the tokenizer.

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
    config = from_pretrained(AutoConfig.from_pretrained, model_name, f"model '{model_name}'",
                             "a directory saved with save_pretrained, or a hub id where the hub "
                             "can be reached")
    config.num_labels = len(labels)
    config.id2label, config.label2id = id2label, {v: k for k, v in id2label.items()}
    if config.model_type != "bert" and portable(pooling):
        config.problem_type = "single_label_classification"
        try:
            model = AutoModelForSequenceClassification.from_pretrained(
                model_name, config=config,
                attn_implementation=attention_implementation(model_name))
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
        if not portable(pooling):  # saved with relation.py and auto_map
            BertForRelationClassification.register_for_auto_class(
                "AutoModelForSequenceClassification")
        model = BertForRelationClassification.from_pretrained(
            model_name, config=config, attn_implementation=attention_implementation(model_name))
    if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    return accept_relation_batches(model), tokenizer, marker_ids


def model_pooling(model) -> str:
    """The pooling of a model from :func:`build_relation_model` or :func:`load_relation_model`."""
    if isinstance(model, BertForRelationClassification):
        return model.pooling
    return "cls"


POOLER_SCALE = 1e-5
"""``a`` of the exported near-identity pooler ``tanh(a x) / a`` (:func:`to_sequence_classifier`):
``(a x)^2 / 3``, the relative error, stays below 1e-7 for hidden values up to 50 (fp32; in fp16
the ``a x`` of small hidden values are subnormal and lose precision)."""


def to_sequence_classifier(model: BertForRelationClassification, scale: float = POOLER_SCALE):
    """The standard ``BertForSequenceClassification`` computing a ``cls``-pooling model's logits.

    The encoder weights are copied; the pooler ``tanh(W x + b)`` gets ``W = scale * I``, ``b = 0``
    and the classifier ``W_c / scale``, so ``W_c / scale * tanh(scale * x) = W_c x (1 - (scale
    x)^2 / 3 + ...)``: the same logits, each term to a relative 1e-7 for hidden values up to 50.

    Args:
        model: a trained :class:`BertForRelationClassification` with ``cls`` pooling.
        scale: ``a`` above (:data:`POOLER_SCALE`).

    Returns:
        a ``BertForSequenceClassification`` on the CPU in eval mode (config without bertkit's
        relation fields or ``auto_map``).

    Raises:
        ValueError: ``model`` does not use ``cls`` pooling.
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    if model.pooling != "cls":
        raise ValueError(f"only cls pooling has a standard class, not {model.pooling!r}")
    d = model.config.to_dict()
    for key in ("relation_pooling", "subject_start_ids", "object_start_ids", "relation_markers",
                "auto_map", "architectures", "_name_or_path"):
        d.pop(key, None)
    config = BertConfig.from_dict(d)
    config.problem_type = "single_label_classification"
    out = BertForSequenceClassification(config).eval()
    missing, unexpected = out.bert.load_state_dict(
        {k: v.detach().cpu().float() for k, v in model.bert.state_dict().items()}, strict=False)
    assert not unexpected and all(k.startswith("pooler.") for k in missing), (missing, unexpected)
    H = config.hidden_size
    with torch.no_grad():
        out.bert.pooler.dense.weight.copy_(torch.eye(H) * scale)
        out.bert.pooler.dense.bias.zero_()
        out.classifier.weight.copy_(model.classifier.weight.detach().cpu().double() / scale)
        out.classifier.bias.copy_(model.classifier.bias.detach().cpu())
    return out


def save_relation_model(model, tokenizer, directory: Path, meta: dict) -> None:
    """Write the Hugging Face model, the tokenizer with the markers, and ``bertkit.json`` (``meta``
    plus task, labels in id order and pooling).

    A BERT ``cls`` model is saved as a standard ``BertForSequenceClassification``
    (:func:`to_sequence_classifier`); ``entity-start`` as the custom class with ``relation.py``
    (remote code); another architecture's ``*ForSequenceClassification`` as it is.
    """
    model = unwrap(model)
    pooling = model_pooling(model)
    if isinstance(model, BertForRelationClassification):
        if portable(pooling):
            model = to_sequence_classifier(model)
        else:
            BertForRelationClassification.register_for_auto_class(
                "AutoModelForSequenceClassification")
    write_saved_model(model, tokenizer, directory, "re", {
        **meta, "labels": [model.config.id2label[i] for i in range(model.config.num_labels)],
        "pooling": pooling})


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

    path, meta = find_saved_model(directory, "re", "relation-extraction")
    config = load_pretrained(lambda p, **_: AutoConfig.from_pretrained(p), path)
    custom = CUSTOM_CLASS in (getattr(config, "architectures", None) or [])
    model = load_pretrained(BertForRelationClassification.from_pretrained if custom
                            else AutoModelForSequenceClassification.from_pretrained, path)
    accept_relation_batches(model).eval()
    tokenizer = load_tokenizer(str(path))
    markers = MarkerSet(tuple(meta.get("entity_types", ())))
    marker_ids = {m: tokenizer.convert_tokens_to_ids(m) for m in markers.tokens()}
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    return model, tokenizer, labels, markers, marker_ids, meta
