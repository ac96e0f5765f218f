"""The NER model: a Hugging Face token-classification encoder plus an optional CRF.

The encoder and its linear head are a plain ``BertForTokenClassification`` (saved with
``save_pretrained``, so ``AutoModelForTokenClassification`` and ``pipeline("token-classification")``
load it). The CRF transition scores, when used, are saved beside it in ``crf.safetensors``;
bertkit's own ``evaluate``/``predict`` use them, while the plain pipeline decodes per token. So
that the saved emissions also decode well alone (with ``aggregation_strategy="first"``), a CRF
tagger trains them with a token-level cross-entropy term beside the CRF likelihood: without it
the CRF's transitions carry the ``B-``/``I-`` distinction and the emissions alone never predict
``B-`` (issue 18). The price, on 400 BC5CDR training sentences with MiniLM: bertkit's own F1
45.19 with the term vs 65.83 without after 2 epochs, 71.92 vs 73.79 after 4, for entity
agreement between the pipeline and bertkit of 96.83 vs 46.76 and 95.08 vs 79.28
(``benchmarks/results/ner_vs_stock/ner_crf_token_loss.log``). ``TOKEN_LOSS_WEIGHT`` sets the term's weight.
Decoding in bertkit is constrained Viterbi over word-level scores, so every output is valid IOB2
(with a CRF: its learned transitions; without: log-softmax scores and the IOB2 constraints only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

from bertkit.decoding.viterbi import viterbi_decode
from bertkit.encoders import (LOAD_ERRORS, _short, attention_implementation, quiet_transformers,
                              resolve_model_source)
from bertkit.errors import BertkitError
from bertkit.heads.crf import FORBIDDEN, LinearChainCRF
from bertkit.predict.pruned_forward import logits_at, supports_pruning
from bertkit.data.tagging import allowed_transitions
from bertkit.tasks.common import find_saved_model, load_pretrained, write_saved_model

CRF_FILE = "crf.safetensors"
TOKEN_LOSS_WEIGHT = 1.0  # cross-entropy on the emissions beside the CRF likelihood (forward())


class TokenTagger(nn.Module):
    """Encoder + linear head (+ CRF) over IOB2 labels.

    Args:
        encoder: a ``*ForTokenClassification`` model with ``num_labels == len(labels)``.
        labels: the C labels in id order (sorted IOB2 strings).
        crf: add a :class:`LinearChainCRF` over first-piece (word-level) scores.
        label_all_subwords: also train continuation pieces (their ``I-`` label) with
            cross-entropy.

    Set ``packer`` (a :class:`~bertkit.inputs.packing.Packer`) to run training forward passes on packed
    rows (same outputs, no padding work); :meth:`decode` always runs unpacked on length-sorted
    batches, which are already nearly free of padding, and computes the last layer at first pieces
    only (``prune_last_layer``, on by default; :mod:`bertkit.predict.pruned_forward`).
    """

    def __init__(self, encoder: nn.Module, labels: Sequence[str], crf: bool = False,
                 label_all_subwords: bool = False) -> None:
        super().__init__()
        self.encoder = encoder
        self.labels = list(labels)
        self.label_all_subwords = label_all_subwords
        self.crf = LinearChainCRF(self.labels) if crf else None
        self.packer = None
        self.predict_packer = None  # a Packer: prediction on packed rows (tag_sentences pack=)
        self.scorer = None  # emissions from another backend (bertkit.predict.onnx_backend.OnnxScorer)
        self.prune_last_layer = True
        start_ok, trans_ok = allowed_transitions(self.labels)
        self.register_buffer("start_mask", (~torch.tensor(start_ok)).float() * FORBIDDEN,
                             persistent=False)
        self.register_buffer("trans_mask", (~torch.tensor(trans_ok)).float() * FORBIDDEN,
                             persistent=False)

    def forward(self, input_ids, attention_mask, labels=None, word_pos=None, word_mask=None,
                word_labels=None, loss_scale=None, **plan) -> dict[str, torch.Tensor]:
        """Args: ``[B, T]`` pieces, mask, token labels; ``[B, K]`` word positions, mask, labels;
        ``loss_scale``: a scalar multiplying the token cross-entropy (see below); ``plan``: a
        packing plan made where the batch was built (``pack_src``, ``pack_pos``,
        ``pack_seg``, ``unpack_index``: :func:`bertkit.inputs.packing.plan_batch`), used with
        ``packer`` set instead of planning here (which reads lengths back to the host).

        Returns:
            ``{"logits": [B, T, C], "loss": scalar, ...}`` (losses when labels are given).
            Without a CRF: token cross-entropy averaged over labelled pieces (``loss_count`` of
            them). With a CRF: ``crf_loss``, the CRF negative log-likelihood (Lafferty et al.,
            2001, sec. 3; the neural CRF tagger of Lample et al., 2016, sec. 2.2) averaged over
            windows, plus ``token_loss``, the per-piece softmax cross-entropy of BERT's
            token-classification head (Devlin et al., 2019, sec. 5.3) over the labelled pieces,
            likewise summed per window and averaged over windows, with weight 1: the joint
            objective trains the emissions to be a tagger on
            their own (so the saved model decodes well without the CRF, e.g. in
            ``pipeline("token-classification", aggregation_strategy="first")``), while the CRF
            adds the label transitions for bertkit's Viterbi decoding.

        ``loss_scale`` (from :class:`~bertkit.tasks.ner.encoding.WindowBatches`) is the batch's
        labelled pieces over their mean per batch, so that every labelled token weighs the same
        whatever its batch: length-grouped batches would otherwise over-weight the tokens of short
        sentences (a batch of 32 titles counting as much as a batch of 32 long sentences), which
        random batches, as in the stock recipe, do not.
        """
        if self.packer is not None and plan:
            logits = self.packer.planned_logits(self.encoder, input_ids, **plan)
        elif self.packer is not None:
            logits = self.packer.logits(self.encoder, input_ids, attention_mask)
        else:
            logits = self.encoder(input_ids=input_ids, attention_mask=attention_mask).logits
        out = {"logits": logits}
        if labels is None:
            return out
        if self.crf is None:
            out["loss"] = self._token_loss(logits, labels, loss_scale)
            out["loss_count"] = (labels != -100).sum()
            return out
        emissions = self.word_scores(logits, word_pos)
        rows = max(input_ids.shape[0], 1)
        crf_loss = self.crf(emissions, word_labels, word_mask) / rows
        # summed over a window's labelled pieces like the CRF's NLL over its words, so neither
        # term dominates the emissions' gradient (a mean would weigh ~1/words of the CRF term)
        token_loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(),
                                     ignore_index=-100, reduction="sum") / rows
        out["crf_loss"], out["token_loss"] = crf_loss, token_loss
        out["loss"] = crf_loss + TOKEN_LOSS_WEIGHT * token_loss
        return out

    @staticmethod
    def _token_loss(logits: torch.Tensor, labels: torch.Tensor,
                    loss_scale: torch.Tensor | None) -> torch.Tensor:
        """Mean cross-entropy over pieces labelled != -100, times ``loss_scale`` if given."""
        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)
        return loss if loss_scale is None else loss * loss_scale

    @staticmethod
    def word_scores(logits: torch.Tensor, word_pos: torch.Tensor) -> torch.Tensor:
        """Scores at each word's first piece: ``[B, T, C]`` gathered at ``[B, K]`` -> ``[B, K, C]``."""
        return logits.gather(1, word_pos.unsqueeze(2).expand(-1, -1, logits.shape[2]))

    def emissions(self, input_ids, attention_mask, word_pos) -> torch.Tensor:
        """Scores at each word's first piece, ``[B, K, C]``; in eval mode the last layer is
        computed at those pieces only where the architecture allows
        (:mod:`bertkit.predict.pruned_forward`: same scores, less work). With ``scorer`` set (ONNX
        Runtime) it gives the scores; with ``predict_packer`` set, several windows share a row
        with block-diagonal attention (:class:`~bertkit.inputs.packing.Packer`, Krell et al. 2021: no
        attention across windows, so the same scores to float rounding, without padding)."""
        if not self.training and self.scorer is not None:
            return self.scorer(input_ids, attention_mask, word_pos).to(input_ids.device)
        if not self.training and self.predict_packer is not None:
            return self.word_scores(self.predict_packer.logits(self.encoder, input_ids,
                                                               attention_mask), word_pos)
        if not self.training and self.prune_last_layer and supports_pruning(self.encoder):
            return logits_at(self.encoder, input_ids, attention_mask, word_pos)
        logits = self.encoder(input_ids=input_ids, attention_mask=attention_mask).logits
        return self.word_scores(logits, word_pos)

    @torch.inference_mode()
    def decode(self, input_ids, attention_mask, word_pos, word_mask, **_) -> torch.Tensor:
        """Best valid IOB2 label ids per owned word, ``[B, K]`` long (0 where ``word_mask`` is False)."""
        emissions = self.emissions(input_ids, attention_mask, word_pos).float()
        if self.crf is not None:
            return self.crf.decode(emissions, word_mask)
        C = emissions.shape[2]
        return viterbi_decode(emissions.log_softmax(-1), word_mask, self.trans_mask,
                              self.start_mask, torch.zeros(C, device=emissions.device))

    def save(self, directory: Path, tokenizer, meta: dict) -> None:
        """Write the Hugging Face model and tokenizer, ``bertkit.json`` and the CRF (if any)."""
        write_saved_model(self.encoder, tokenizer, directory, "ner", {
            **meta, "labels": self.labels, "crf": self.crf is not None,
            "label_all_subwords": self.label_all_subwords},
            weights={CRF_FILE: self.crf} if self.crf is not None else None)


def build_tagger(model_name: str, labels: Sequence[str], crf: bool, label_all_subwords: bool,
                 dropout: float | None = None) -> TokenTagger:
    """A new tagger from a pretrained encoder (directory or hub id), with a fresh head.

    Raises:
        BertkitError: the encoder cannot be loaded.
    """
    from transformers import AutoModelForTokenClassification

    quiet_transformers()
    model_name = resolve_model_source(model_name)
    id2label = dict(enumerate(labels))
    try:
        encoder = AutoModelForTokenClassification.from_pretrained(
            model_name, num_labels=len(labels), id2label=id2label,
            label2id={v: k for k, v in id2label.items()}, ignore_mismatched_sizes=True,
            attn_implementation=attention_implementation(model_name))
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load model '{model_name}': {_short(exc)}",
                           expected="a directory saved with save_pretrained, or a hub id "
                                    "where the hub can be reached") from None
    return TokenTagger(encoder, labels, crf=crf, label_all_subwords=label_all_subwords)


def load_tagger(directory: str | Path) -> tuple[TokenTagger, dict]:
    """Load a tagger saved by :meth:`TokenTagger.save` (labels exactly as saved).

    Accepts a run directory (uses its ``model/``) or the model directory itself.

    Raises:
        BertkitError: no saved bertkit NER model there.
    """
    from transformers import AutoModelForTokenClassification

    path, meta = find_saved_model(directory, "ner", "NER", untagged=True)
    encoder = load_pretrained(AutoModelForTokenClassification.from_pretrained, path)
    id2label = encoder.config.id2label
    labels = [id2label[i] for i in range(len(id2label))]
    tagger = TokenTagger(encoder, labels, crf=meta.get("crf", False),
                         label_all_subwords=meta.get("label_all_subwords", False))
    if tagger.crf is not None:
        tagger.crf.load_state_dict(load_file(str(path / CRF_FILE)))
    tagger.source = Path(path)  # where an ONNX export is cached (bertkit.predict.onnx_backend)
    tagger.eval()
    return tagger, meta
