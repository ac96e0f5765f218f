"""What pretraining needs to know of each encoder family: the from-scratch config of an
``arch=`` (``--config arch=modernbert,layers=2,hidden=128``) and where a masked-LM keeps its
vocabulary head (:class:`MLMHead`).

Families and their masked-LM heads (``transformers`` 5.x classes):

- BERT (Devlin et al., 2019): ``BertForMaskedLM.cls`` (``BertForPreTraining.cls.predictions``
  with NSP), a dense + GELU + LayerNorm transform and a decoder tied to the input embeddings.
- RoBERTa (Liu et al., 2019), XLM-RoBERTa, CamemBERT: ``lm_head``, the same shape.
- ModernBERT (Warner et al., 2024): ``head`` (dense + GELU + LayerNorm) then ``decoder`` (tied);
  the encoder's own ``final_norm`` is part of the base model, so ``last_hidden_state`` is
  already normalised. No absolute position table: rotary embeddings (RoPE, Su et al., 2021).
- DeBERTa-v2/v3 (He et al., 2021): ``cls`` with ``config.legacy`` (the default, and what the
  released v3 checkpoints load as), else ``lm_predictions``, whose decoder is the word-embedding
  matrix passed in at call time. Relative positions only (``position_biased_input=False``).
- DistilBERT (Sanh et al., 2019): ``vocab_transform``, ``vocab_layer_norm``,
  ``vocab_projector`` (tied); ELECTRA (Clark et al., 2020), its generator's
  ``generator_predictions`` and ``generator_lm_head``.

SpanBERT's SBO head keeps its own learned relative-position embedding of the target inside its
span (:class:`bertkit.heads.sbo.SpanBoundaryHead`, ``p_{i-s+1}``); it never reads the encoder's
position table, so it works unchanged on ModernBERT (RoPE) and DeBERTa (relative attention).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from bertkit.errors import BertkitError

ARCHS = ("bert", "modernbert", "deberta-v2")
"""The ``arch=`` values of ``--config``."""

DEFAULT_POSITIONS = {"bert": 512, "modernbert": 8192, "deberta-v2": 512}
"""``max_position_embeddings`` of a from-scratch model: BERT's learned table; ModernBERT's
8,192-position RoPE context (no table: the number only bounds the input); DeBERTa-v2's relative
distance range (``max_relative_positions`` is taken from it, bucketed in 256)."""

INTERMEDIATE_RATIO = {"bert": 4.0, "modernbert": 1.5, "deberta-v2": 4.0}
"""Feed-forward width / hidden width when ``intermediate=`` is not given: BERT's and DeBERTa's
4 H; ModernBERT-base's 1,152 / 768 = 1.5 H (its GeGLU input projection is 2 x that wide)."""


def split_arch(spec: str) -> tuple[str, str]:
    """``(arch, the rest)`` of a ``--config`` value: ``"arch=modernbert,layers=2,hidden=128"``
    gives ``("modernbert", "layers=2,hidden=128")``; no ``arch=`` gives ``"bert"``.

    >>> split_arch("layers=2,arch=deberta-v2,hidden=64")
    ('deberta-v2', 'layers=2,hidden=64')

    Raises:
        BertkitError: an unknown or repeated ``arch``.
    """
    arch, rest = None, []
    for part in (p.strip() for p in spec.split(",")):
        key, _, value = part.partition("=")
        if key.strip() != "arch":
            rest.append(part)
            continue
        if arch is not None:
            raise BertkitError(f"--config {spec}: 'arch' given twice", expected="each key once")
        arch = value.strip().lower()
        if arch not in ARCHS:
            raise BertkitError(f"--config {spec}: unknown arch '{value.strip()}'",
                               expected=" or ".join(ARCHS))
    return arch or "bert", ",".join(p for p in rest if p)


def build_config(arch: str, sizes: dict[str, int], tokenizer, max_positions: int | None = None,
                 dropout: float | None = None, intermediate_given: bool = True):
    """The ``transformers`` config of a from-scratch ``arch`` model.

    Args:
        arch: one of :data:`ARCHS`.
        sizes: ``num_hidden_layers``, ``hidden_size``, ``num_attention_heads``,
            ``intermediate_size`` (:func:`bertkit.tasks.pretrain.model.parse_size`).
        tokenizer: its ``len`` is the vocabulary size; its pad/CLS/SEP ids go into the config.
        max_positions: None: :data:`DEFAULT_POSITIONS`.
        dropout: hidden and attention dropout; None: the family's default (BERT and DeBERTa
            0.1, ModernBERT 0).
        intermediate_given: False: the feed-forward width is :data:`INTERMEDIATE_RATIO` x H.

    ModernBERT keeps its defaults otherwise: a global-attention layer every third layer (the
    first included), local windows of 128 tokens elsewhere, RoPE theta 160,000 (global) and
    10,000 (local), no biases, pre-norm. DeBERTa-v2 is built as DeBERTa-v3-base is configured:
    relative attention with c2p and p2c terms, 256 position buckets, no absolute positions, no
    segment embeddings, the layer-normed relative embeddings.
    """
    from transformers import BertConfig, DebertaV2Config, ModernBertConfig

    sizes = dict(sizes)
    if not intermediate_given:
        sizes["intermediate_size"] = int(INTERMEDIATE_RATIO[arch] * sizes["hidden_size"])
    positions = max_positions or DEFAULT_POSITIONS[arch]
    common = dict(vocab_size=len(tokenizer), max_position_embeddings=positions,
                  pad_token_id=tokenizer.pad_token_id, **sizes)
    if arch == "modernbert":
        drop = {} if dropout is None else {"attention_dropout": dropout,
                                           "embedding_dropout": dropout, "mlp_dropout": dropout}
        return ModernBertConfig(cls_token_id=tokenizer.cls_token_id,
                                bos_token_id=tokenizer.cls_token_id,
                                sep_token_id=tokenizer.sep_token_id,
                                eos_token_id=tokenizer.sep_token_id, **common, **drop)
    drop = {} if dropout is None else {"hidden_dropout_prob": dropout,
                                       "attention_probs_dropout_prob": dropout}
    if arch == "deberta-v2":
        return DebertaV2Config(relative_attention=True, pos_att_type=["p2c", "c2p"],
                               position_biased_input=False, position_buckets=256,
                               max_relative_positions=-1, norm_rel_ebd="layer_norm",
                               type_vocab_size=0, layer_norm_eps=1e-7, **common, **drop)
    return BertConfig(**common, **drop)


DROPOUT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob",  # BERT, DeBERTa
                  "attention_dropout", "embedding_dropout", "mlp_dropout")  # ModernBERT
"""Config fields that hold a dropout rate, per family (:func:`set_dropout` sets those present)."""


def set_dropout(model: nn.Module, dropout: float) -> None:
    """Set every dropout of a loaded model to ``dropout``: its config's dropout fields
    (:data:`DROPOUT_FIELDS`, so the saved model keeps it) and each ``nn.Dropout`` module's rate
    (BERT's SDPA attention reads its rate from its ``nn.Dropout``)."""
    for name in DROPOUT_FIELDS:
        if hasattr(model.config, name):
            setattr(model.config, name, dropout)
    for module in list(model.modules()):
        if isinstance(module, nn.Dropout):
            module.p = dropout
        elif type(module).__name__ == "ModernBertAttention":
            # its SDPA call reads this rate; its output dropout is an Identity when the model
            # was built with attention_dropout 0 (ModernBERT's default), so it is replaced
            module.attention_dropout = dropout
            module.out_drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()


@dataclass(frozen=True)
class MLMHead:
    """Where a masked-LM keeps its vocabulary head.

    Attributes:
        family: the family name, for messages.
        prefixes: parameter-name prefixes (in the masked-LM) of the head: trained from the first
            step while ``head_warmup_steps`` hold the encoder (the decoder weight is tied to the
            input embeddings, which belong to the encoder).
        nsp: a ``BertForPreTraining`` (``cls.predictions`` + ``cls.seq_relationship``).
    """

    family: str
    prefixes: tuple[str, ...]
    nsp: bool = False

    def logits(self, mlm: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits ``[..., V]`` of last-layer hidden states ``[..., H]``."""
        if self.family == "ModernBERT":
            return mlm.decoder(mlm.head(hidden))
        if self.family == "DeBERTa-v2/v3" and self.prefixes == ("lm_predictions.",):
            return mlm.lm_predictions(hidden, mlm.get_input_embeddings())
        if self.family == "ELECTRA":
            return mlm.generator_lm_head(mlm.generator_predictions(hidden))
        if self.family == "DistilBERT":
            h = mlm.vocab_layer_norm(mlm.activation(mlm.vocab_transform(hidden)))
            return mlm.vocab_projector(h)
        if self.nsp:
            return mlm.cls.predictions(hidden)
        return getattr(mlm, self.prefixes[0][:-1])(hidden)

    def owns(self, name: str) -> bool:
        """Whether masked-LM parameter ``name`` belongs to the head."""
        return name.startswith(self.prefixes)


def mlm_head(mlm: nn.Module) -> MLMHead:
    """The :class:`MLMHead` of a ``*ForMaskedLM`` (or ``BertForPreTraining``) model.

    Raises:
        BertkitError: a model whose head is none of the families' (the message lists them).
    """
    name = type(mlm).__name__
    if name.startswith("ModernBert"):
        return MLMHead("ModernBERT", ("head.", "decoder."))
    if name.startswith("DebertaV2"):
        return MLMHead("DeBERTa-v2/v3", ("cls.",) if hasattr(mlm, "cls") else ("lm_predictions.",))
    if name.startswith("Electra"):
        return MLMHead("ELECTRA", ("generator_predictions.", "generator_lm_head."))
    if name.startswith("DistilBert"):
        return MLMHead("DistilBERT", ("vocab_transform.", "vocab_layer_norm.", "vocab_projector."))
    if hasattr(mlm, "cls"):
        return MLMHead("BERT", ("cls.",), nsp=hasattr(mlm.cls, "seq_relationship"))
    if hasattr(mlm, "lm_head"):
        return MLMHead("RoBERTa", ("lm_head.",))
    raise BertkitError(f"unsupported masked-LM architecture {name}",
                       expected="a BERT, RoBERTa, ModernBERT, DeBERTa-v2/v3, DistilBERT or "
                                "ELECTRA masked-LM")
