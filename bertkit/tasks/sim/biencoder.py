"""The bi-encoder of ``finetune sim --architecture bi-encoder`` and the zero-shot row, built on
sentence-transformers (the library this model type comes from; its modules, losses and folder
layout are used as they are).

Sentence-BERT (Reimers and Gurevych, 2019, §3): each text goes through the encoder alone, its
token vectors are pooled into one embedding (mean pooling by default, §3; the encoder's own
pooling where its folder declares one: a sentence-transformers folder's ``modules.json`` and
``1_Pooling/config.json``), and the predicted similarity is the cosine of the two embeddings.
Training objectives: ``cosine``, the mean squared error between that cosine and the gold score
scaled to [0, 1] (§3, sentence-transformers' ``CosineSimilarityLoss``), or ``cosent``, CoSENT's
ranking loss over every pair of pairs in a batch (Su, 2022; ``CoSENTLoss``), which uses only the
gold order. The zero-shot row (MTEB's STS protocol, Muennighoff et al., 2023, §3.2) is the same
cosine from the encoder as given, no training.

The saved folder is a sentence-transformers folder (``SentenceTransformer(path)`` loads it); its
root is a plain ``transformers`` encoder (``AutoModel``), so the card's pooling lines also run it.
A predicted score is ``low + cosine * (high - low)`` in the gold scores' units, ``(low, high)``
the set's declared range or else the training scores' range (Pearson and Spearman do not depend
on this map; the MSE does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from bertkit.inputs.batching import pad_right
from bertkit.encoders import _short, quiet_transformers
from bertkit.errors import BertkitError
from bertkit.predict.inference import run_batches, sorted_batches
from bertkit.training.devices import Runtime

ARCHITECTURES = ("cross-encoder", "bi-encoder")
OBJECTIVES = ("cosine", "cosent")


def load_bi_encoder(name: str, max_length: int):
    """A ``SentenceTransformer`` over the encoder at ``name``: the folder's own modules where
    it is a sentence-transformers folder (``modules.json``: its pooling, and a ``Normalize``
    if any), else the encoder with mean pooling. Texts are cut to ``max_length`` pieces.

    Raises:
        BertkitError: the encoder cannot be loaded.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    quiet_transformers()
    try:
        if (Path(name) / "modules.json").is_file():
            model = SentenceTransformer(name, device="cpu")
        else:
            encoder = Transformer(name, max_seq_length=max_length)
            model = SentenceTransformer(
                modules=[encoder, Pooling(encoder.get_embedding_dimension(), "mean")],
                device="cpu")
    except (OSError, ValueError, KeyError, RuntimeError, TypeError) as exc:
        raise BertkitError(f"cannot load '{name}' as a sentence encoder: {_short(exc)}",
                           expected="a BERT-family encoder directory or hub id") from None
    model.max_seq_length = max_length
    return model


def pooling_of(model) -> str:
    """The pooling mode of a ``SentenceTransformer`` (``mean``, ``cls``, ``max``, ...), with
    ``+normalize`` when its embeddings are normalised."""
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

    modes = [m.pooling_mode for m in model if isinstance(m, Pooling)]
    mode = modes[0] if modes else "none"
    mode = mode if isinstance(mode, str) else "+".join(mode)
    return mode + ("+normalize" if any(isinstance(m, Normalize) for m in model) else "")


def encode_sides(xs: Sequence, tokenizer, max_length: int) -> tuple[list[dict], int]:
    """Each pair's two texts as separate piece sequences (``[CLS] text [SEP]``), each cut to
    ``max_length`` pieces.

    Returns:
        (one dict per pair: ``a`` and ``b`` ``[T]`` int64 ids, ``labels`` the gold score (NaN
        when unlabelled); the number of texts that were cut).
    """
    if not xs:
        return [], 0
    out, cut = [], 0
    sides = []
    for texts in ([x.text for x in xs], [x.text_pair for x in xs]):
        full = tokenizer(texts, truncation=False)["input_ids"]
        ids = tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
        cut += sum(len(f) > len(i) for f, i in zip(full, ids))
        sides.append(ids)
    for x, a, b in zip(xs, *sides):
        out.append({"a": np.asarray(a, dtype=np.int64), "b": np.asarray(b, dtype=np.int64),
                    "labels": np.float32(x.score if x.score is not None else np.nan)})
    return out, cut


def _side(items: Sequence[dict], key: str, pad_id: int) -> dict[str, torch.Tensor]:
    ids, mask = pad_right([x[key] for x in items], pad_id)
    return {"input_ids": torch.from_numpy(ids),
            "attention_mask": torch.from_numpy(mask.astype(np.int64))}


def collate_sides(items: Sequence[dict], pad_id: int, low: float, high: float
                  ) -> dict[str, torch.Tensor]:
    """A training batch: ``a_input_ids``/``a_attention_mask`` and ``b_...`` ``[B, T]`` long
    (each side padded to its longest text) and ``labels`` ``[B]`` float, the gold scaled to
    [0, 1] by ``(score - low) / (high - low)``."""
    a, b = _side(items, "a", pad_id), _side(items, "b", pad_id)
    scores = np.asarray([x["labels"] for x in items], dtype=np.float32)
    return {**{f"a_{k}": v for k, v in a.items()}, **{f"b_{k}": v for k, v in b.items()},
            "labels": torch.from_numpy((scores - low) / max(high - low, 1e-12))}


class BiEncoder(torch.nn.Module):
    """The training view of a ``SentenceTransformer``: ``model(**batch)`` (a
    :func:`collate_sides` batch) returns ``{"loss"}``, the sentence-transformers loss of
    ``objective`` (``cosine``: ``CosineSimilarityLoss``; ``cosent``: ``CoSENTLoss``, scale 20)
    over the two sides' embeddings ``[B, H]`` and the scaled gold ``[B]``.

    Attributes:
        encoder: the ``SentenceTransformer`` (what is saved).
    """

    def __init__(self, encoder, objective: str = "cosine") -> None:
        super().__init__()
        from sentence_transformers.sentence_transformer import losses

        if objective not in OBJECTIVES:
            raise BertkitError(f"unknown objective '{objective}'",
                               expected=" or ".join(OBJECTIVES))
        self.objective = objective
        self.loss = (losses.CosineSimilarityLoss(encoder) if objective == "cosine"
                     else losses.CoSENTLoss(encoder))

    @property
    def encoder(self):
        return self.loss.model

    def forward(self, a_input_ids, a_attention_mask, b_input_ids, b_attention_mask, labels
                ) -> dict[str, torch.Tensor]:
        a = {"input_ids": a_input_ids, "attention_mask": a_attention_mask}
        b = {"input_ids": b_input_ids, "attention_mask": b_attention_mask}
        return {"loss": self.loss([a, b], labels)}


def cosines(encoder, items: Sequence[dict], runtime: Runtime, pad_id: int,
            batch_size: int = 64) -> np.ndarray:
    """The cosine ``[N]`` float32 (in [-1, 1]) of each pair's two pooled embeddings (each side
    embedded in batches sorted by length)."""
    if not items:
        return np.zeros(0, dtype=np.float32)
    encoder.eval()
    encoder.to(runtime.device)
    embedded = {}
    for key in ("a", "b"):
        rows: list = [None] * len(items)

        def run(idx: np.ndarray) -> None:
            batch = runtime.to_device(_side([items[i] for i in idx], key, pad_id))
            with runtime.autocast():
                emb = encoder(batch)["sentence_embedding"].float()  # [B, H]
            for i, row in zip(idx, emb.cpu()):
                rows[i] = row

        run_batches(run, sorted_batches(np.asarray([len(x[key]) for x in items]), batch_size),
                    runtime.device)
        embedded[key] = torch.stack(rows)
    cos = torch.nn.functional.cosine_similarity(embedded["a"], embedded["b"], dim=-1)
    return cos.numpy().astype(np.float32)


def to_scores(cos: np.ndarray, low: float, high: float) -> np.ndarray:
    """Cosines as scores in the gold's units: ``low + cos * (high - low)`` ``[N]``.

    >>> to_scores(np.array([0.0, 0.5, 1.0]), 0.0, 4.0).tolist()
    [0.0, 2.0, 4.0]
    """
    return (low + cos * (high - low)).astype(np.float32)


def zero_shot_scores(model_name: str, splits: dict[str, list], tokenizer, max_length: int,
                     runtime: Runtime, low: float, high: float, batch_size: int = 64,
                     encoder=None) -> dict:
    """The zero-shot row: each split scored by the cosine of the encoder's pooled embeddings,
    no training (:func:`load_bi_encoder`; ``encoder`` when one is loaded already).

    Returns:
        ``{split: similarity_scores(...)}`` plus ``pooling`` (the pooling used).
    """
    from bertkit.metrics.sim import similarity_scores

    encoder = encoder if encoder is not None else load_bi_encoder(model_name, max_length)
    out: dict = {"pooling": pooling_of(encoder)}
    with torch.no_grad():
        for split, xs in splits.items():
            items, _ = encode_sides(xs, tokenizer, max_length)
            pred = to_scores(cosines(encoder, items, runtime, tokenizer.pad_token_id,
                                     batch_size), low, high)
            out[split] = similarity_scores([x.score for x in xs], pred)
    return out


POOLING_LINES = {
    "mean": "mask = batch[\"attention_mask\"].unsqueeze(-1).float()   # [B, T, 1]\n"
            "    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # mean pooling",
    "cls": "return hidden[:, 0]  # the [CLS] vector (cls pooling)",
    "max": "mask = batch[\"attention_mask\"].unsqueeze(-1).bool()\n"
           "    return hidden.masked_fill(~mask, -1e9).max(1).values  # max pooling",
}


def usage(results: dict) -> str:
    """The card's snippet: sentence-transformers, then plain ``transformers`` with the pooling
    lines of the saved pooling (``results["pooling"]``)."""
    mode = str(results.get("pooling", "mean")).split("+")[0]
    low, high = results.get("score_range") or (0.0, 1.0)
    lines = POOLING_LINES.get(mode, f"...  # {mode} pooling: see 1_Pooling/config.json")
    length = results.get("max_length", 256)
    return f'''from sentence_transformers import SentenceTransformer

model = SentenceTransformer("{{path}}")
a = model.encode(["Here, looking for agents that could kill KRAS mutant cells ..."])
b = model.encode(["GATA2 knockdown in KRAS mutant cells reduced active RHO ..."])
cosine = model.similarity_pairwise(a, b)          # in [-1, 1]
score = {low:g} + cosine * ({high:g} - {low:g})   # in the training scores' units

# the same with plain transformers ({mode} pooling, as 1_Pooling/config.json says)
import torch
from transformers import AutoModel, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("{{path}}")
encoder = AutoModel.from_pretrained("{{path}}").eval()

def embed(texts):
    batch = tokenizer(texts, padding=True, truncation=True, max_length={length},
                      return_tensors="pt")
    with torch.no_grad():
        hidden = encoder(**batch).last_hidden_state  # [B, T, H]
    {lines}

cosine = torch.nn.functional.cosine_similarity(embed(["..."]), embed(["..."]))'''
