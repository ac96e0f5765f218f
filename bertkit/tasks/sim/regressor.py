"""The cross-encoder of ``finetune sim`` (the default architecture): BERT's STS-B setup
(Devlin et al., 2019, §4.1): ``[CLS] text [SEP] pair [SEP]`` through the encoder, the pooled
``[CLS]`` vector into a linear layer with one output (``AutoModelForSequenceClassification``,
``num_labels=1``, ``problem_type="regression"``), mean squared error against the gold score."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from bertkit.inputs.batching import pad_right
from bertkit.predict.inference import run_batches, sorted_batches
from bertkit.tasks.common import build_pretrained
from bertkit.tasks.sim.data import PairExample
from bertkit.training.devices import Runtime


def encode(xs: Sequence[PairExample], tokenizer, max_length: int) -> tuple[list[dict], int]:
    """Each pair as ``[CLS] text [SEP] pair [SEP]`` (token types 0 then 1), cut longest first
    to ``max_length`` pieces (the tokenizer's ``longest_first``).

    Returns:
        (one dict per pair: ``input_ids`` ``[T]``, ``token_type_ids`` ``[T]`` when the
        tokenizer uses them, ``labels`` (float score, NaN when unlabelled); the number of pairs
        that were cut).
    """
    if not xs:
        return [], 0
    a, b = [x.text for x in xs], [x.text_pair for x in xs]
    full = tokenizer(a, b, truncation=False)["input_ids"]
    enc = tokenizer(a, b, truncation="longest_first", max_length=max_length)
    types = enc.get("token_type_ids")
    items = [{"input_ids": np.asarray(ids, dtype=np.int64),
              "token_type_ids": np.asarray(types[i], dtype=np.int64) if types else None,
              "labels": np.float32(x.score if x.score is not None else np.nan)}
             for i, (ids, x) in enumerate(zip(enc["input_ids"], xs))]
    return items, sum(len(f) > len(e) for f, e in zip(full, enc["input_ids"]))


def collate(items: Sequence[dict], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad to the batch's longest pair: ``input_ids``, ``attention_mask`` (``token_type_ids``)
    ``[B, T]`` long and ``labels`` ``[B]`` float (the scores)."""
    ids, mask = pad_right([x["input_ids"] for x in items], pad_id)
    out = {"input_ids": torch.from_numpy(ids),
           "attention_mask": torch.from_numpy(mask.astype(np.int64))}
    if items[0]["token_type_ids"] is not None:
        types, _ = pad_right([x["token_type_ids"] for x in items], 0)
        out["token_type_ids"] = torch.from_numpy(types)
    out["labels"] = torch.tensor(np.asarray([x["labels"] for x in items], dtype=np.float32))
    return out


def predict_scores(model, items: Sequence[dict], runtime: Runtime, pad_id: int,
                   batch_size: int = 64) -> np.ndarray:
    """The model's score ``[N]`` float32 for each encoded pair (batches sorted by length)."""
    out = np.zeros(len(items), dtype=np.float32)
    if not items:
        return out
    model.eval()
    model.to(runtime.device)

    def run(idx: np.ndarray) -> None:
        batch = collate([items[i] for i in idx], pad_id)
        batch.pop("labels")
        with runtime.autocast():
            logits = model(**runtime.to_device(batch)).logits  # [B, 1]
        out[idx] = logits[:, 0].float().cpu().numpy()

    run_batches(run, sorted_batches(np.asarray([len(x["input_ids"]) for x in items]),
                                    batch_size), runtime.device)
    return out


def build_regressor(model_name: str):
    """A fresh one-output regression head over the encoder at ``model_name``.

    Raises:
        BertkitError: the encoder cannot be loaded.
    """
    from transformers import AutoModelForSequenceClassification

    return build_pretrained(AutoModelForSequenceClassification.from_pretrained, model_name,
                            "sequence regression", num_labels=1, problem_type="regression")
