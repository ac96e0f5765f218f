"""Training and validation batches for MLM pretraining: packed sequences, masked on the fly.

Masking is dynamic: the masks of batch k of epoch e come from a generator seeded with
(seed, e, k), so every epoch sees new masks, a resumed run sees exactly the masks an
uninterrupted one would, and the data order of epoch e depends only on (seed, e).
Validation always uses token masking with one fixed seed, so every evaluation (and every
strategy) is scored on the same masked tokens.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from bertkit.masking import IGNORE, Masker, check_capacity, mask_capacity, static_positions
from bertkit.tasks.pretrain.data import PackedSequences

VALID_SEED = 20_190_524  # any fixed number: the same validation masks for every run


def batch_generator(seed: int, epoch: int, index: int) -> torch.Generator:
    """A torch generator seeded from (seed, epoch, batch index) through NumPy's SeedSequence."""
    state = np.random.SeedSequence([seed % 2**32, epoch, index]).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


class PretrainBatches:
    """A :class:`bertkit.training.BatchSource` of masked packed sequences.

    Each batch is ``{"input_ids": [B, T], "mlm_positions": [B, K], "mlm_labels": [B, K]}``
    plus, when ``sbo`` is set, ``"sbo_boundaries": [B, T, 2]`` (see
    :attr:`bertkit.masking.MaskedBatch.sbo_boundaries`): every tensor is indexed by row first,
    so a multi-process run can give each process a slice of the rows. The rows are full (no
    padding), so no attention mask is sent: the encoder then attends everywhere without
    building or checking one. The masked positions come at a fixed count ``K =
    mask_capacity(T, mask_prob)`` per row (:func:`bertkit.masking.static_positions`, labels
    ``-100`` where a row has fewer), computed here, in the prefetch worker: the step gathers
    them without a host sync and with one shape per ``[B, T]``.

    Args:
        sequences: the packed corpus.
        batch_size: sequences per batch (the last batch of an epoch may be smaller).
        masker: the masking strategy.
        seed: data order and masks derive from it.
        sbo: pass the span-boundary targets on.
    """

    def __init__(self, sequences: PackedSequences, batch_size: int, masker: Masker, seed: int,
                 sbo: bool = False) -> None:
        self.sequences, self.batch_size = sequences, batch_size
        self.masker, self.seed, self.sbo = masker, seed, sbo

    def num_batches(self, epoch: int) -> int:
        return math.ceil(len(self.sequences) / self.batch_size)

    def iter_batches(self, epoch: int, start: int = 0) -> Iterator[dict[str, torch.Tensor]]:
        order = np.random.default_rng([self.seed % 2**32, epoch]).permutation(len(self.sequences))
        for k in range(start, self.num_batches(epoch)):
            ids = torch.from_numpy(self.sequences.get(order[k * self.batch_size:(k + 1) * self.batch_size]))
            masked = self.masker(ids, batch_generator(self.seed, epoch, k))
            capacity = mask_capacity(ids.shape[1], self.masker.mask_prob)
            check_capacity(masked.labels, capacity)
            positions, targets = static_positions(masked.labels, capacity)
            batch = {"input_ids": masked.input_ids, "mlm_positions": positions,
                     "mlm_labels": targets}
            if self.sbo and masked.sbo_boundaries is not None:
                batch["sbo_boundaries"] = masked.sbo_boundaries
            yield batch


def validation_batches(sequences: PackedSequences, batch_size: int,
                       masker: Masker) -> list[dict[str, torch.Tensor]]:
    """The validation set masked once, with a fixed seed (token masking, see module docstring)."""
    out = []
    for k in range(0, len(sequences), batch_size):
        ids = torch.from_numpy(sequences.get(np.arange(k, min(k + batch_size, len(sequences)))))
        masked = masker(ids, batch_generator(VALID_SEED, 0, k // batch_size))
        out.append({"input_ids": masked.input_ids, "attention_mask": torch.ones_like(ids),
                    "labels": masked.labels})
    return out


@torch.no_grad()
def evaluate_mlm(model, batches: list[dict[str, torch.Tensor]], runtime) -> dict[str, float]:
    """Validation MLM loss (mean cross-entropy over masked tokens, nats), perplexity (exp of the
    loss) and masked-token accuracy (argmax equals the original token)."""
    total, correct, count = 0.0, 0, 0
    for batch in batches:
        batch = runtime.to_device(batch)
        with runtime.autocast():
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                        labels=batch["labels"])
        logits = out["mlm_logits"].float()
        target = batch["labels"][batch["labels"] != IGNORE]
        total += float(F.cross_entropy(logits, target, reduction="sum"))
        correct += int((logits.argmax(-1) == target).sum())
        count += int(target.numel())
    loss = total / max(count, 1)
    return {"loss": loss, "perplexity": math.exp(min(loss, 50.0)), "accuracy": correct / max(count, 1),
            "masked_tokens": count}
