"""The dependency parser: a Hugging Face encoder plus the biaffine head, saved side by side.

``model/`` holds the encoder and tokenizer in Hugging Face format (``AutoModel`` and
``AutoTokenizer`` load them), ``parser.safetensors`` (the biaffine head's weights) and
``bertkit.json`` (the relation labels in id order and the head's settings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn

from bertkit.decoding.eisner import eisner_decode
from bertkit.decoding.mst import mst_decode
from bertkit.encoders import (LOAD_ERRORS, _short, attention_implementation, quiet_transformers,
                              resolve_model_source)
from bertkit.errors import BertkitError
from bertkit.heads.biaffine import BiaffineHead
from bertkit.tasks.common import find_saved_model, load_pretrained, write_saved_model

HEAD_FILE = "parser.safetensors"
DECODERS = {"mst": mst_decode, "eisner": eisner_decode}  # keys: config.DECODER_NAMES


class BiaffineParser(nn.Module):
    """Encoder -> word vectors ``[B, N+1, H]`` (root first) -> :class:`BiaffineHead`.

    Args:
        encoder: a Hugging Face base model (``AutoModel``).
        rels: the R relation labels in id order.
        arc_mlp / rel_mlp / mlp_dropout: head sizes and dropout (Dozat & Manning table 2).
        scalar_mix: mix all hidden layers with learned weights instead of using the last one.
    """

    def __init__(self, encoder: nn.Module, rels: Sequence[str], arc_mlp: int = 500,
                 rel_mlp: int = 100, mlp_dropout: float = 0.33, scalar_mix: bool = False) -> None:
        super().__init__()
        self.encoder = encoder
        self.rels = list(rels)
        cfg = encoder.config
        self.settings = {"arc_mlp": arc_mlp, "rel_mlp": rel_mlp, "mlp_dropout": mlp_dropout,
                         "scalar_mix": scalar_mix}
        self.head = BiaffineHead(cfg.hidden_size, len(self.rels), arc_mlp, rel_mlp, mlp_dropout,
                                 cfg.num_hidden_layers + 1 if scalar_mix else 0)
        self.head_lr: float | None = None  # set for training; not saved

    def lr_for(self, name: str) -> float | None:
        """Peak learning rate of parameter ``name``: ``head_lr`` for the parser head (freshly
        initialised; SuPar trains it 20x faster than the encoder), else the run's ``--lr``."""
        return self.head_lr if name.startswith("head.") else None

    def word_vectors(self, input_ids, attention_mask, piece_slot, mask) -> torch.Tensor:
        """``[W, T]`` windows -> ``[B, N+1, H]`` sentence-level vectors: each slot the sum of the
        pieces ``piece_slot`` sends there divided by their count (first piece or mean)."""
        mix = self.head.mix is not None
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                           output_hidden_states=mix)
        h = self.head.mix(out.hidden_states) if mix else out.last_hidden_state
        B, N1 = mask.shape
        H = h.shape[-1]
        slot = piece_slot.reshape(-1)
        # pieces sent nowhere (-1) go to one extra slot, dropped after: every piece is added
        # (no boolean selection: no host sync, static shapes)
        idx = torch.where(slot >= 0, slot, B * N1)
        flat = h.reshape(-1, H)
        words = torch.zeros(B * N1 + 1, H, dtype=flat.dtype, device=flat.device).index_add_(
            0, idx, flat)[:-1]
        count = torch.zeros(B * N1 + 1, dtype=flat.dtype, device=flat.device).index_add_(
            0, idx, torch.ones_like(idx, dtype=flat.dtype))[:-1]
        return (words / count.clamp(min=1).unsqueeze(1)).view(B, N1, H)

    def forward(self, mask, word_mask, input_ids, attention_mask, piece_slot, heads=None,
                rels=None) -> dict[str, torch.Tensor]:
        """Returns ``{"arc_scores": [B, N+1, N+1], "loss": scalar}`` (loss when ``heads`` given)."""
        words = self.word_vectors(input_ids, attention_mask, piece_slot, mask)
        if heads is None:
            return {"arc_scores": self.head.arc_scores(words, mask)}
        loss, s_arc = self.head.loss(words, mask, heads, rels, word_mask)
        return {"loss": loss, "arc_scores": s_arc}

    @torch.inference_mode()
    def parse(self, mask, word_mask, input_ids, attention_mask, piece_slot, decoder: str = "mst",
              **_) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Decode a batch: per sentence ``[n]`` heads (a well-formed tree) and ``[n]`` label ids.

        Arc scores are log-softmax normalised over heads before tree decoding; labels are the
        argmax of the label scorer given the decoded heads.
        """
        words = self.word_vectors(input_ids, attention_mask, piece_slot, mask)
        s_arc = self.head.arc_scores(words, mask).log_softmax(-1).cpu().numpy()
        lengths = word_mask.sum(1).cpu().numpy()
        decode = DECODERS[decoder]
        heads = [decode(s_arc[b, :n + 1, :n + 1]) for b, n in enumerate(lengths)]
        padded = np.zeros(mask.shape, dtype=np.int64)
        for b, h in enumerate(heads):
            padded[b, 1:len(h) + 1] = h
        rel = self.head.rel_scores(words, torch.from_numpy(padded).to(words.device)).argmax(-1)
        rel = rel.cpu().numpy()
        return heads, [rel[b, 1:n + 1] for b, n in enumerate(lengths)]

    def save(self, directory: Path, tokenizer, meta: dict) -> None:
        """Write the encoder and tokenizer (Hugging Face format), the head and ``bertkit.json``."""
        write_saved_model(self.encoder, tokenizer, directory, "dep",
                          {**meta, "rels": self.rels, **self.settings},
                          weights={HEAD_FILE: self.head})


def _load_encoder(source: str):
    from transformers import AutoModel

    quiet_transformers()
    try:
        return AutoModel.from_pretrained(source,
                                         attn_implementation=attention_implementation(source))
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load model '{source}': {_short(exc)}",
                           expected="a directory saved with save_pretrained, or a hub id "
                                    "where the hub can be reached") from None


def build_parser(model_name: str, rels: Sequence[str], arc_mlp: int = 500, rel_mlp: int = 100,
                 mlp_dropout: float = 0.33, scalar_mix: bool = False) -> BiaffineParser:
    """A new parser from a pretrained encoder (directory or hub id) with a fresh head.

    Raises:
        BertkitError: the encoder cannot be loaded.
    """
    encoder = _load_encoder(resolve_model_source(model_name))
    return BiaffineParser(encoder, rels, arc_mlp, rel_mlp, mlp_dropout, scalar_mix)


def load_parser(directory: str | Path) -> tuple[BiaffineParser, dict]:
    """Load a parser saved by :meth:`BiaffineParser.save` (a run directory or its ``model/``).

    Raises:
        BertkitError: no saved bertkit dependency parser there.
    """
    from transformers import AutoModel

    path, meta = find_saved_model(directory, "dep", "dependency parser", files=(HEAD_FILE,))
    parser = BiaffineParser(load_pretrained(AutoModel.from_pretrained, path), meta["rels"],
                            meta["arc_mlp"],
                            meta["rel_mlp"], meta["mlp_dropout"], meta["scalar_mix"])
    parser.head.load_state_dict(load_file(str(path / HEAD_FILE)))
    parser.eval()
    return parser, meta
