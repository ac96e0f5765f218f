"""Sequence packing for encoder forward passes, without cross-contamination.

Several short sequences share one row of a batch: each keeps its own ``[CLS] ... [SEP]``, its
position ids restart at 0, and a block-diagonal attention mask stops any token from attending
outside its own sequence (Krell et al., 2021, "Efficient Sequence Packing without
Cross-contamination", arXiv:2107.02027, Sec. 3). The hidden states are therefore those of the
sequences run one by one (up to float rounding), while the padding that a batch of random
sentences would carry (BC5CDR: 60% of the tokens of a random batch of 32) is gone. That lets a
fine-tuning task keep random batches, as the stock recipes do, at the speed of length-sorted ones.

Packing changes only how the encoder is called; the caller keeps its padded ``[N, T]`` batch
and gets ``[N, T, ...]`` outputs back.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

# model types whose position ids start at 0 (BERT family) or after the padding id (RoBERTa family)
POSITION_START = {"bert": 0, "electra": 0, "roberta": None, "xlm-roberta": None, "camembert": None}


def position_start(config) -> int | None:
    """First position id of a sequence for this encoder config, or None if packing is unsupported.

    BERT-style models number positions from 0; RoBERTa-style models from ``pad_token_id + 1``.
    Other architectures (e.g. without a ``position_ids`` input) are not packed.
    """
    model_type = getattr(config, "model_type", None)
    if model_type not in POSITION_START:
        return None
    start = POSITION_START[model_type]
    return start if start is not None else int(config.pad_token_id) + 1


def plan_rows(lengths: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Assign sequences to rows of ``capacity`` tokens, first-fit decreasing.

    Args:
        lengths: ``[N]`` tokens per sequence, each ``<= capacity``.
        capacity: tokens per packed row.

    Returns:
        ``(row [N], offset [N], number of rows)``: sequence ``n`` occupies
        ``row[n], offset[n] : offset[n] + lengths[n]``.

    The loop runs over the N sequences of one batch (tens), never over tokens.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and int(lengths.max()) > capacity:
        raise ValueError(f"a sequence of {int(lengths.max())} tokens exceeds the row capacity {capacity}")
    row = np.zeros(len(lengths), dtype=np.int64)
    offset = np.zeros(len(lengths), dtype=np.int64)
    free: list[int] = []  # tokens used per row
    for n in np.argsort(-lengths, kind="stable"):
        need = int(lengths[n])
        for r, used in enumerate(free):
            if used + need <= capacity:
                break
        else:
            r = len(free)
            free.append(0)
        row[n], offset[n] = r, free[r]
        free[r] += need
    return row, offset, len(free)


def round_up(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple`` (>= 1): a shape bucket."""
    return -(-max(n, 1) // multiple) * multiple


def plan_batch(lengths: np.ndarray, T: int, capacity: int, start: int,
               row_multiple: int = 1, length_multiple: int | None = None
               ) -> dict[str, torch.Tensor]:
    """Where each token of a right-padded ``[N, T]`` batch goes in packed rows, computed on the
    host where the batch is built (the prefetch worker), so that the step only gathers.

    Rows are ``L = max(capacity, longest)`` tokens rounded up to a multiple of
    ``length_multiple`` (default ``capacity``: a shape bucket) and their number R is rounded up
    to a multiple of ``row_multiple`` (extra rows are all padding): the step's shapes then come
    from a small set, which a compiled or graph-captured step reuses (CUDA: rows x8, lengths x
    capacity). On a CPU, where shapes cost nothing and padding does, both are 1: the rows are
    then exactly those :meth:`Packer.pack` makes.

    Args:
        lengths: ``[N]`` real tokens per sequence (each <= T).
        T: the padded batch width.
        capacity: minimum tokens per packed row.
        start: first position id (:func:`position_start`).
        row_multiple: rows rounded up to a multiple of this.
        length_multiple: row length rounded up to a multiple of this (None: ``capacity``).

    Returns:
        CPU long tensors: ``pack_src [R, L]`` (flat index into ``[N * T]`` of each packed slot;
        0 at padding), ``pack_pos [R, L]`` (position ids), ``pack_seg [R, L]`` (1 + sequence
        index, 0 at padding) and ``unpack_index [N, T]`` (flat index into ``[R * L]`` of each
        token; ``R * L``, a zero row, at padding).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    N = len(lengths)
    L = round_up(max(capacity, int(lengths.max()) if N else 1),
                 capacity if length_multiple is None else length_multiple)
    row, offset, R = plan_rows(lengths, L)
    R = round_up(R, row_multiple)
    n_idx = np.repeat(np.arange(N), lengths)  # [M] sequence of each real token
    j_idx = np.arange(len(n_idx)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    dest = row[n_idx] * L + offset[n_idx] + j_idx
    src = np.zeros(R * L, dtype=np.int64)
    src[dest] = n_idx * T + j_idx
    pos = np.zeros(R * L, dtype=np.int64)
    pos[dest] = j_idx + start
    seg = np.zeros(R * L, dtype=np.int64)
    seg[dest] = n_idx + 1
    unpack = np.full(N * T, R * L, dtype=np.int64)
    unpack[n_idx * T + j_idx] = dest
    return {"pack_src": torch.from_numpy(src.reshape(R, L)),
            "pack_pos": torch.from_numpy(pos.reshape(R, L)),
            "pack_seg": torch.from_numpy(seg.reshape(R, L)),
            "unpack_index": torch.from_numpy(unpack.reshape(N, T))}


class Packer:
    """Runs a Hugging Face encoder on packed rows and returns per-sequence outputs.

    Args:
        config: the encoder's config (``model_type``, ``pad_token_id``, ``_attn_implementation``).
        capacity: tokens per packed row (rows are never shorter than the batch's longest sequence).

    Raises:
        ValueError: the architecture cannot be packed (see :func:`position_start`).
    """

    def __init__(self, config, capacity: int = 128) -> None:
        start = position_start(config)
        if start is None:
            raise ValueError(f"packing is not supported for model type "
                             f"{getattr(config, 'model_type', None)!r}")
        self.start = start
        self.capacity = capacity
        self.pad_id = int(getattr(config, "pad_token_id", 0) or 0)
        self.bool_mask = getattr(config, "_attn_implementation", "sdpa") in ("sdpa", "flash_attention_2")

    def pack(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        """Pack a right-padded batch.

        Args:
            input_ids: ``[N, T]`` long.
            attention_mask: ``[N, T]``, 1 on the first ``length[n]`` positions of each row.

        Returns:
            ``(inputs, index)``: ``inputs`` has ``input_ids`` ``[R, L]``, ``position_ids``
            ``[R, L]`` and a block-diagonal ``attention_mask`` ``[R, 1, L, L]`` (bool for SDPA:
            True = attend; else additive float); ``index`` is ``(src [M], dest [M])``, flat
            positions of the M real tokens in ``[N * T]`` and ``[R * L]``.
        """
        N, T = input_ids.shape
        device = input_ids.device
        lengths = attention_mask.sum(1)
        lengths_np = lengths.cpu().numpy()
        L = max(self.capacity, int(lengths_np.max()) if N else 1)
        row_np, offset_np, R = plan_rows(lengths_np, L)
        row = torch.from_numpy(row_np).to(device)
        offset = torch.from_numpy(offset_np).to(device)
        real = attention_mask.bool()
        n_idx, j_idx = real.nonzero(as_tuple=True)  # [M], sequence-major order
        src = n_idx * T + j_idx
        dest = row[n_idx] * L + offset[n_idx] + j_idx
        ids = torch.full((R * L,), self.pad_id, dtype=input_ids.dtype, device=device)
        ids[dest] = input_ids.reshape(-1)[src]
        pos = torch.zeros(R * L, dtype=torch.long, device=device)
        pos[dest] = j_idx + self.start
        seg = torch.zeros(R * L, dtype=torch.long, device=device)  # 0 = padding
        seg[dest] = n_idx + 1
        seg = seg.view(R, L)
        # padding attends to padding only (never an empty row, so never NaN); tokens to their own
        mask = (seg[:, :, None] == seg[:, None, :]).unsqueeze(1)
        inputs = {"input_ids": ids.view(R, L), "position_ids": pos.view(R, L),
                  "attention_mask": mask}
        return inputs, (src, dest)

    def additive(self, mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """A bool mask as the additive float mask eager attention expects."""
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(
            ~mask, torch.finfo(dtype).min)

    @staticmethod
    def unpack(packed: torch.Tensor, index, N: int, T: int) -> torch.Tensor:
        """``[R, L, ...]`` packed outputs back to ``[N, T, ...]`` (zeros at padding positions)."""
        src, dest = index
        flat = packed.reshape(-1, *packed.shape[2:])
        out = flat.new_zeros((N * T, *packed.shape[2:]))
        out[src] = flat[dest]
        return out.view(N, T, *packed.shape[2:])

    def logits(self, encoder: nn.Module, input_ids: torch.Tensor,
               attention_mask: torch.Tensor) -> torch.Tensor:
        """``encoder(...).logits`` for a padded ``[N, T]`` batch, computed on packed rows:
        ``[N, T, C]`` (zeros at padding positions)."""
        inputs, index = self.pack(input_ids, attention_mask)
        if not self.bool_mask:
            inputs["attention_mask"] = self.additive(inputs["attention_mask"],
                                                     next(encoder.parameters()).dtype)
        out = encoder(**inputs).logits
        return self.unpack(out, index, *input_ids.shape)

    def planned_logits(self, encoder: nn.Module, input_ids: torch.Tensor, pack_src: torch.Tensor,
                       pack_pos: torch.Tensor, pack_seg: torch.Tensor,
                       unpack_index: torch.Tensor) -> torch.Tensor:
        """:meth:`logits` from a plan made where the batch was built (:func:`plan_batch`):
        gathers and comparisons only, so no host sync and shapes fixed by the plan's buckets.

        Args:
            input_ids: ``[N, T]``; the plan's ``[R, L]`` and ``[N, T]`` tensors.

        Returns:
            ``[N, T, C]`` logits, zeros at padding positions.
        """
        N, T = input_ids.shape
        R, L = pack_src.shape
        real = pack_seg > 0
        ids = torch.where(real, input_ids.reshape(-1)[pack_src], self.pad_id)  # [R, L]
        # padding attends to padding only (never an empty row, so never NaN); tokens to their own
        mask = (pack_seg[:, :, None] == pack_seg[:, None, :]).unsqueeze(1)  # [R, 1, L, L]
        if not self.bool_mask:
            mask = self.additive(mask, next(encoder.parameters()).dtype)
        out = encoder(input_ids=ids, position_ids=pack_pos, attention_mask=mask).logits
        flat = torch.cat([out.reshape(R * L, -1), out.new_zeros(1, out.shape[-1])])
        return flat[unpack_index.reshape(-1)].view(N, T, -1)
