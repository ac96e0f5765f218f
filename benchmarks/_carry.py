"""An encoder small enough to travel to a lent GPU machine (64 MiB with the repository, which is
about 39 MiB): each large weight matrix as int8 at a step of its row's standard deviation / 24
(the word embeddings' / 12), the values past +-127 steps kept exactly, xz-compressed; restored to
fp32 on the device. The packaged MiniLM: 18.1 MB (fp32 90 MB, fp16 45 MB), 1.9% relative error on
the weights, 3.3% on its last hidden states. Used by ``adapt_gpu.py`` and ``gpu_check.py``.

Reference: per-row (per-channel) symmetric int8 weights, Jacob et al. (2018), Quantization and
training of neural networks for efficient integer-arithmetic-only inference, sec. 2; the few
outlier values kept in full precision, Dettmers et al. (2022), LLM.int8(), sec. 3.2."""

from __future__ import annotations

import io
import lzma
import shutil
import tarfile
from pathlib import Path

STEP_DIVISOR, EMBEDDING_DIVISOR = 24, 12  # int8 step = the row's std / 24 (word embeddings / 12)
WEIGHTS, FILES = "encoder-weights.npz.xz", "encoder-files.tar.xz"


def pack_encoder(model: str | Path, dest: Path, divisor: int = STEP_DIVISOR,
                 embedding_divisor: int = EMBEDDING_DIVISOR) -> dict:
    """Write ``dest/encoder-files.tar.xz`` (``config.json``, the tokenizer files) and
    ``dest/encoder-weights.npz.xz``: each 2-D weight of 65,536 values or more as int8 ``q`` with a
    per-row fp32 step ``s = std(row) / divisor`` (``embedding_divisor`` for the word embeddings),
    so w ~ q * s, the values past +-127 steps kept exactly (``.out_idx`` int32, ``.out_val`` fp32),
    the other tensors fp32; xz with no literal context (the int8 bytes are nearly independent).

    Returns:
        ``{"bytes", "relative_weight_error", "divisor", "embedding_divisor"}``: the error is
        ||w' - w|| / ||w|| over the quantised matrices.

    Raises:
        OSError: ``model`` cannot be read.
    """
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    net = AutoModel.from_pretrained(model, dtype=torch.float32)
    arrays, err, norm = {}, 0.0, 0.0
    for name, tensor in net.state_dict().items():
        w = tensor.numpy()
        if w.ndim != 2 or w.size < 65536:
            arrays[name] = w
            continue
        d = embedding_divisor if name.endswith("word_embeddings.weight") else divisor
        step = (w.std(axis=1, keepdims=True) / d).astype(np.float32)
        step[step == 0] = 1.0
        scaled = np.rint(w / step)
        out = np.flatnonzero(np.abs(scaled) > 127)
        q = np.clip(scaled, -127, 127).astype(np.int8)
        arrays.update({f"{name}.q8": q, f"{name}.step": step[:, 0],
                       f"{name}.out_idx": out.astype(np.int32),
                       f"{name}.out_val": w.reshape(-1)[out]})
        back = q * step
        back.reshape(-1)[out] = w.reshape(-1)[out]
        err += float(((back - w) ** 2).sum())
        norm += float((w ** 2).sum())
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    (dest / WEIGHTS).write_bytes(lzma.compress(buf.getvalue(), format=lzma.FORMAT_XZ, filters=[
        {"id": lzma.FILTER_LZMA2, "preset": 9, "lc": 0, "lp": 0, "pb": 0}]))
    with tempfile_dir() as tmp:
        net.config.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(model).save_pretrained(tmp)
        with tarfile.open(dest / FILES, "w:xz", preset=9) as tar:
            for f in sorted(tmp.iterdir()):
                tar.add(f, arcname=f.name)
    return {"bytes": (dest / WEIGHTS).stat().st_size + (dest / FILES).stat().st_size,
            "relative_weight_error": (err / norm) ** 0.5, "divisor": divisor,
            "embedding_divisor": embedding_divisor}


def unpack_encoder(src: Path, dst: Path) -> Path:
    """Restore into ``dst`` (``save_pretrained``, fp32) the encoder :func:`pack_encoder` wrote
    into the folder ``src``."""
    import numpy as np
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    arrays = dict(np.load(io.BytesIO(lzma.decompress((src / WEIGHTS).read_bytes()))))
    state = {}
    for key, value in arrays.items():
        if key.endswith(".q8"):
            name = key[:-3]
            w = value.astype(np.float32) * arrays[f"{name}.step"][:, None]
            w.reshape(-1)[arrays[f"{name}.out_idx"]] = arrays[f"{name}.out_val"]
            state[name] = torch.from_numpy(w)
        elif not key.endswith((".step", ".out_idx", ".out_val")):
            state[key] = torch.from_numpy(value)
    with tempfile_dir() as tmp:
        with tarfile.open(src / FILES, "r:xz") as tar:
            tar.extractall(tmp, filter="data")
        net = AutoModel.from_config(AutoConfig.from_pretrained(tmp), dtype=torch.float32)
        net.load_state_dict(state, strict=True)
        net.save_pretrained(dst)
        AutoTokenizer.from_pretrained(tmp).save_pretrained(dst)
    return dst


class tempfile_dir:
    """A temporary folder as a ``Path``, removed on exit."""

    def __enter__(self) -> Path:
        import tempfile

        self.path = Path(tempfile.mkdtemp(prefix="carry_"))
        return self.path

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
