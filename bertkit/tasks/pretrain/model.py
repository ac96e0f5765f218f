"""The pretraining model: a Hugging Face masked-LM plus SpanBERT's SBO head, or BERT's
next-sentence-prediction (NSP) head.

The vocabulary projection is applied only at the masked positions (about 15% of them), not at
every position as ``BertForMaskedLM.forward`` does: on a CPU that projection dominates the cost
of a step. The loss is ``MLM + sbo_weight * SBO``, each the mean cross-entropy over its own
targets (Joshi et al., 2020, sec. 3.2); both are returned so the loop logs them separately.
With NSP the model is a ``BertForPreTraining`` (pooler + ``cls.seq_relationship``, a
``Linear(H, 2)`` on the pooled ``[CLS]``) and the loss is ``MLM + NSP`` cross-entropy (Devlin et
al., 2019, sec. 3.1 and appendix A.2), ``nsp_loss`` logged apart.

Saving writes the masked-LM with ``save_pretrained`` (``AutoModelForMaskedLM`` and the
``fill-mask`` pipeline load it; ``AutoModel*`` for fine-tuning too), the tokenizer, the SBO head
in ``sbo.safetensors`` and ``bertkit.json``; with NSP it is saved as ``BertForPreTraining``
(``AutoModelForPreTraining`` loads the NSP head too, ``AutoModelForMaskedLM`` the MLM part).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from bertkit.encoders import (LOAD_ERRORS, _short, attention_implementation, quiet_transformers,
                              resolve_model_source)
from bertkit.errors import BertkitError
from bertkit.heads.losses import chunked_cross_entropy
from bertkit.heads.sbo import SpanBoundaryHead
from bertkit.masking import IGNORE
from bertkit.tasks.pretrain.families import build_config, mlm_head, set_dropout, split_arch

SBO_FILE = "sbo.safetensors"
META_FILE = "bertkit.json"

# From-scratch sizes: BERT-tiny/-small (Turc et al., 2019), BERT-base/-large (Devlin et al., 2019).
SIZES = {
    "tiny": dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512),
    "small": dict(num_hidden_layers=4, hidden_size=512, num_attention_heads=8, intermediate_size=2048),
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
    "large": dict(num_hidden_layers=24, hidden_size=1024, num_attention_heads=16, intermediate_size=4096),
}


class PretrainModel(nn.Module):
    """Masked-LM (+ SBO) for pretraining.

    Args:
        mlm: a ``*ForMaskedLM`` model of a supported family (BERT, RoBERTa, ModernBERT,
            DeBERTa-v2/v3, DistilBERT: its head is found by
            :func:`bertkit.tasks.pretrain.families.mlm_head`), or a ``BertForPreTraining`` (its
            ``cls`` holds ``predictions`` and the NSP head ``seq_relationship``: NSP is then
            trained when batches carry ``next_sentence_label``).
        sbo: the span-boundary head, or None.
        sbo_weight: weight of the SBO loss.

    Raises:
        BertkitError: a masked-LM whose head bertkit does not know.
    """

    def __init__(self, mlm: nn.Module, sbo: SpanBoundaryHead | None = None,
                 sbo_weight: float = 1.0) -> None:
        super().__init__()
        self.mlm = mlm
        self.sbo = sbo
        self.sbo_weight = sbo_weight
        self.head = mlm_head(mlm)  # where this family keeps its vocabulary head
        self.nsp = self.head.nsp
        self.head_warmup_steps = 0  # steps the heads train alone, the encoder frozen (see below)

    def frozen_steps_for(self, name: str) -> int:
        """Optimiser steps with learning rate 0 for parameter ``name``: ``head_warmup_steps``
        for the encoder (embeddings included, so the tied MLM decoder too), 0 for the new heads
        (the MLM transform and bias, SBO, NSP), which train first on the frozen encoder; the
        encoder then joins with its own warm-up (:func:`bertkit.training.optim.build_scheduler`)."""
        head = name.startswith("sbo.") or (name.startswith("mlm.") and self.head.owns(name[4:]))
        return 0 if head else self.head_warmup_steps

    @property
    def encoder(self) -> nn.Module:
        """The masked-LM's encoder (``base_model``: ``bert``, ``roberta``, ``model`` for
        ModernBERT with its final norm, ``deberta``); its ``last_hidden_state`` feeds the heads."""
        return self.mlm.base_model

    def mlm_head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits ``[..., V]`` of hidden states ``[..., H]`` (transform + tied decoder)."""
        return self.head.logits(self.mlm, hidden)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, sbo_boundaries: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None,
                next_sentence_label: torch.Tensor | None = None,
                mlm_positions: torch.Tensor | None = None,
                mlm_labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Args: ``[B, T]`` ids, mask (None: attend everywhere, for full rows) and MLM labels
        (-100: not predicted), or instead the training step's fixed-count form,
        ``mlm_positions`` and ``mlm_labels`` ``[B, K]``
        (:func:`bertkit.masking.static_positions`); the SBO targets as ``[B, T, 2]`` span
        boundaries (:attr:`bertkit.masking.MaskedBatch.sbo_boundaries`, read by
        :class:`bertkit.heads.sbo.SpanBoundaryHead`); for NSP ``[B, T]`` segment ids and
        ``[B]`` labels (0: B follows A, 1: B is random).

        Returns:
            with ``labels``: ``mlm_logits [N, V]`` at the N labelled positions (row-major);
            with ``mlm_positions``: ``mlm_logits [B * K, V]`` and ``mlm_targets [B * K]``
            (-100 at filler positions), computed with gathers only (no host sync, shapes
            fixed by ``[B, T]`` and K); either way ``loss``, ``mlm_loss``, (with SBO
            boundaries) ``sbo_loss``, (with NSP labels) ``nsp_loss`` and ``nsp_logits [B,
            2]``, scalars, and ``loss_count``, N (the training loop weights processes by it).
        """
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        encoded = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra)
        hidden = encoded.last_hidden_state
        if mlm_positions is not None:
            return self._static_losses(hidden, mlm_positions, mlm_labels, sbo_boundaries)
        if labels is None:
            return {"hidden": hidden}
        picked = labels != IGNORE
        logits = self.mlm_head(hidden[picked])
        target = labels[picked]
        mlm_loss = F.cross_entropy(logits.float(), target) if target.numel() else hidden.sum() * 0
        out = {"mlm_logits": logits, "mlm_loss": mlm_loss, "loss": mlm_loss,
               "loss_count": torch.tensor(target.numel(), device=logits.device)}
        if self.sbo is not None and sbo_boundaries is not None:
            sbo_logits, sbo_picked = self.sbo(hidden, sbo_boundaries,
                                              self.mlm.get_input_embeddings().weight)
            if sbo_logits.shape[0]:
                sbo_loss = F.cross_entropy(sbo_logits.float(), labels[sbo_picked])
            else:  # zero, but touching every SBO parameter so DDP sees them all used
                sbo_loss = hidden.sum() * 0 + sum(p.sum() for p in self.sbo.parameters()) * 0
            out["sbo_loss"] = sbo_loss
            out["loss"] = mlm_loss + self.sbo_weight * sbo_loss
        if self.nsp and next_sentence_label is not None:
            nsp_logits = self.mlm.cls.seq_relationship(encoded.pooler_output)
            nsp_loss = F.cross_entropy(nsp_logits.float(), next_sentence_label)
            out["nsp_logits"], out["nsp_loss"] = nsp_logits, nsp_loss
            out["loss"] = out["loss"] + nsp_loss
        return out

    def _static_losses(self, hidden: torch.Tensor, positions: torch.Tensor, targets: torch.Tensor,
                       sbo_boundaries: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """MLM (+ SBO) losses at ``[B, K]`` fixed-count positions (see :meth:`forward`): each
        a sum of cross-entropies over the real targets divided by their count (at least 1), so
        filler positions and a batch without targets cost nothing and sync nothing; the
        cross-entropy in fp32 blocks, without an fp32 copy of the ``[B * K, V]`` logits
        (:func:`bertkit.heads.losses.chunked_cross_entropy`)."""
        H = hidden.shape[-1]
        picked = hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, H))  # [B, K, H]
        logits = self.mlm_head(picked.flatten(0, 1))  # [B * K, V]
        target = targets.reshape(-1)
        count = (target != IGNORE).sum()
        mlm_loss = chunked_cross_entropy(logits, target, IGNORE) / count.clamp(min=1)
        out = {"mlm_logits": logits, "mlm_targets": target, "mlm_loss": mlm_loss,
               "loss": mlm_loss, "loss_count": count}
        if self.sbo is not None and sbo_boundaries is not None:
            sbo_logits, valid = self.sbo(hidden, sbo_boundaries,
                                         self.mlm.get_input_embeddings().weight, positions)
            sbo_target = torch.where(valid, targets, IGNORE).reshape(-1)
            out["sbo_loss"] = (chunked_cross_entropy(sbo_logits, sbo_target, IGNORE)
                               / valid.sum().clamp(min=1))
            out["loss"] = mlm_loss + self.sbo_weight * out["sbo_loss"]
        return out

    def save(self, directory: Path, tokenizer, meta: dict) -> None:
        """Write the masked-LM and tokenizer (Hugging Face format), the SBO head and ``bertkit.json``."""
        directory.mkdir(parents=True, exist_ok=True)
        self.mlm.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        if self.sbo is not None:
            save_file({k: v.detach().cpu().contiguous() for k, v in self.sbo.state_dict().items()},
                      str(directory / SBO_FILE))
        from bertkit.vocab.match import vocab_checksum

        meta = {**meta, "task": "pretrain", "sbo": self.sbo is not None, "nsp": self.nsp,
                "sbo_file": SBO_FILE if self.sbo is not None else None,
                "vocab_sha256": vocab_checksum(tokenizer)}
        (directory / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


# ``--config layers=4,hidden=256[,heads=4,intermediate=1024]``: the keys and the BertConfig
# fields they set; heads default to hidden / 64 and the feed-forward size to 4 x hidden
# (Devlin et al., 2019; Turc et al., 2019 use the same ratios).
SIZE_KEYS = {"layers": "num_hidden_layers", "hidden": "hidden_size",
             "heads": "num_attention_heads", "intermediate": "intermediate_size"}
SIZE_FORMAT = ("tiny, small, base, large or layers=L,hidden=H[,heads=A,intermediate=I], "
               "each with an optional arch=bert|modernbert|deberta-v2 (e.g. "
               "arch=modernbert,layers=2,hidden=128)")


def parse_size(size: str) -> dict[str, int]:
    """The config size fields of a named size or of a custom ``layers=L,hidden=H[,
    heads=A,intermediate=I]`` (heads default to ``H / 64``, at least 1; intermediate to ``4 H``);
    an ``arch=`` key is read by :func:`bertkit.tasks.pretrain.families.split_arch` and checked
    here, not returned.

    >>> parse_size("layers=4,hidden=256")
    {'num_hidden_layers': 4, 'hidden_size': 256, 'num_attention_heads': 4, 'intermediate_size': 1024}

    Raises:
        BertkitError: an unknown name, key or arch, a value that is not a positive integer, a
            missing ``layers``/``hidden``, or a hidden size not divisible by the heads.
    """
    spec = size
    arch, size = split_arch(spec)
    if not size:
        raise BertkitError(f"--config {spec}: no size beside arch={arch}", expected=SIZE_FORMAT)
    if size in SIZES:
        return dict(SIZES[size])
    if "=" not in size:
        raise BertkitError(f"unknown --config '{size}'", expected=SIZE_FORMAT)
    values: dict[str, int] = {}
    for part in (p.strip() for p in size.split(",") if p.strip()):
        key, _, raw = part.partition("=")
        key = key.strip()
        if key not in SIZE_KEYS:
            raise BertkitError(f"--config {spec}: unknown key '{key}'",
                               expected=", ".join(SIZE_KEYS))
        if key in values:
            raise BertkitError(f"--config {spec}: '{key}' given twice", expected="each key once")
        try:
            values[key] = int(raw.strip())
        except ValueError:
            values[key] = 0
        if values[key] < 1:
            raise BertkitError(f"--config {spec}: {key}={raw.strip()!r}",
                               expected="a positive integer")
    missing = [k for k in ("layers", "hidden") if k not in values]
    if missing:
        raise BertkitError(f"--config {spec}: no {' or '.join(missing)}", expected=SIZE_FORMAT)
    hidden = values["hidden"]
    heads = values.get("heads", max(1, hidden // 64))
    if hidden % heads:
        raise BertkitError(f"--config {spec}: hidden {hidden} is not divisible by {heads} heads",
                           expected="heads dividing hidden (e.g. hidden=256,heads=4)")
    return {"num_hidden_layers": values["layers"], "hidden_size": hidden,
            "num_attention_heads": heads, "intermediate_size": values.get("intermediate", 4 * hidden)}


def scratch_config(size: str, tokenizer, max_positions: int | None = None,
                   dropout: float | None = None):
    """The config of a named or custom size (:func:`parse_size`) and ``arch`` (``BertConfig``
    without one; ``ModernBertConfig``, ``DebertaV2Config``:
    :func:`bertkit.tasks.pretrain.families.build_config`) for the tokenizer's vocabulary;
    ``dropout`` sets the hidden and attention dropout (None: the family's default, BERT's 0.1);
    ``max_positions`` None: the family's (512; ModernBERT 8,192).

    Raises:
        BertkitError: an unknown or malformed size or arch.
    """
    arch, rest = split_arch(size)
    given = "intermediate=" in rest.replace(" ", "")
    return build_config(arch, parse_size(size), tokenizer, max_positions, dropout,
                        intermediate_given=given or arch == "bert")


def build_pretrain_model(model: str | None, size: str | None, tokenizer, sbo: bool,
                         sbo_weight: float, nsp: bool = False,
                         dropout: float | None = None) -> tuple[PretrainModel, dict]:
    """Load a masked-LM to continue pretraining (``model``) or build one from scratch (``size``).

    A checkpoint with no MLM head (a plain encoder such as the packaged MiniLM) gets a new head
    whose decoder is tied to the input embeddings; an SBO head saved beside the model
    (``sbo.safetensors``, from an earlier bertkit run) is loaded, else a new one is made. With
    ``nsp`` the model is loaded as ``BertForPreTraining`` (``AutoModelForPreTraining``): a
    checkpoint without a pooler or NSP head gets new ones. ``dropout`` (None: the model's
    own, BERT's 0.1 from scratch) sets the hidden and attention dropout; Cramming (Geiping &
    Goldstein, 2023, sec. 4.3) trains without dropout when every token is seen about once.

    Returns:
        (the model, facts for the run: ``new_mlm_head``, ``new_nsp_head``, ``new_pooler``,
        ``sbo_loaded``, ``parameters``).

    Raises:
        BertkitError: the model cannot be loaded, its vocabulary is smaller than the tokenizer's,
            or (with ``nsp``) it is not of an architecture with BERT's NSP head.
    """
    from transformers import AutoModelForMaskedLM, AutoModelForPreTraining

    auto = AutoModelForPreTraining if nsp else AutoModelForMaskedLM
    quiet_transformers()
    info = {"new_mlm_head": False, "new_nsp_head": nsp, "new_pooler": nsp, "sbo_loaded": False}
    if size is not None:
        config = scratch_config(size, tokenizer, dropout=dropout)
        if nsp and config.model_type != "bert":
            raise BertkitError(f"--nsp needs BERT's next-sentence head; --config {size} builds "
                               f"a {config.model_type} model",
                               expected="arch=bert (the default), or --no-nsp")
        mlm = auto.from_config(config, attn_implementation=attention_implementation(config))
        info["new_mlm_head"] = True
    else:
        path = resolve_model_source(model)
        try:
            mlm, loading = auto.from_pretrained(
                path, attn_implementation=attention_implementation(path),
                output_loading_info=True)
        except LOAD_ERRORS as exc:
            raise BertkitError(f"cannot load a masked-LM from '{model}': {_short(exc)}",
                               expected="a BERT, RoBERTa, ModernBERT or DeBERTa-v2/v3 model "
                                        "directory or hub id") from None
        missing = [k for k in loading.get("missing_keys", []) if "embeddings" not in k]
        info["new_mlm_head"] = any(mlm_head(mlm).owns(k) and not k.startswith(
            ("cls.seq_relationship", "cls.pooler")) for k in missing)
        info["new_nsp_head"] = nsp and any(k.startswith("cls.seq_relationship") for k in missing)
        info["new_pooler"] = nsp and any(".pooler." in f".{k}" for k in missing)
    if nsp and not (hasattr(mlm, "cls") and hasattr(mlm.cls, "seq_relationship")):
        raise BertkitError(f"--nsp needs a BERT model with a next-sentence head; "
                           f"{type(mlm).__name__} has none",
                           expected="a BERT-architecture model, or --no-nsp")
    if size is None:
        if mlm.get_input_embeddings().weight.shape[0] < len(tokenizer):
            raise BertkitError(f"the model has {mlm.get_input_embeddings().weight.shape[0]} "
                               f"embeddings but the tokenizer {len(tokenizer)} tokens", file=path)
    if dropout is not None:
        set_dropout(mlm, dropout)
    mlm.tie_weights()
    hidden = mlm.config.hidden_size
    head = None
    if sbo:
        head = SpanBoundaryHead(hidden, mlm.get_input_embeddings().weight.shape[0],
                                layer_norm_eps=getattr(mlm.config, "layer_norm_eps",
                                                       getattr(mlm.config, "norm_eps", 1e-12)))
        saved = Path(str(resolve_model_source(model))) / SBO_FILE if model else None
        if saved is not None and saved.is_file():
            state = load_file(str(saved))
            if all(state[k].shape == v.shape for k, v in head.state_dict().items() if k in state):
                head.load_state_dict(state)
                info["sbo_loaded"] = True
    out = PretrainModel(mlm, head, sbo_weight)
    info["parameters"] = sum(p.numel() for p in out.parameters())
    return out, info
