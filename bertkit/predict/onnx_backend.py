"""ONNX Runtime as an optional inference backend for token-classification encoders.

The encoder of a saved model (a Hugging Face ``*ForTokenClassification``) is exported once with
``torch.onnx.export`` (the TorchScript exporter, opset 17, dynamic batch and sequence axes) to
``model.onnx`` beside the model's weights (or, for a read-only model folder, in a cache folder the
caller names), written atomically, with ``model.onnx.json`` beside it recording the SHA-256 of
the weights files it was made from; later runs reuse it while the weights hash the same, and
export again, saying why, when they differ (weights copied in with their old times, as ``cp -a``
and ``rsync -a`` keep them, are caught: times are not compared). The int8 copy records the same
and is remade with its source. ONNX Runtime (Microsoft, https://onnxruntime.ai) then runs the forward
pass with graph optimisations (fused attention, GELU and layer-norm kernels) on ``threads``
intra-op threads; the caller's decoding (CRF or IOB2-constrained Viterbi) is unchanged. Scores
equal PyTorch's fp32 scores to float rounding (about 1e-5), so the decoded labels are the same
(``benchmarks/predict_stream.py`` checks this on BC5CDR test).

Needs the ``onnxruntime`` and ``onnx`` packages: ``pip install 'bertkit[onnx]'``.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn

from bertkit.errors import BertkitError
from bertkit.io import atomic_path, write_text

ONNX_FILE = "model.onnx"
INSTALL_HINT = "pip install 'bertkit[onnx]' (the onnxruntime and onnx packages)"


def require_onnxruntime():
    """The ``onnxruntime`` module.

    Raises:
        BertkitError: ``onnxruntime`` (or ``onnx``, which the exporter needs) is not installed,
            naming the extra to install.
    """
    try:
        import onnx  # noqa: F401  (torch.onnx.export writes through it)
        import onnxruntime
    except ImportError as exc:
        raise BertkitError(f"--backend onnx needs ONNX Runtime ({exc.name} is not installed)",
                           expected=INSTALL_HINT) from None
    return onnxruntime


class _Logits(nn.Module):
    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids, attention_mask):
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).logits


def export_onnx(encoder: nn.Module, path: str | Path) -> Path:
    """Export ``encoder`` (``input_ids``, ``attention_mask`` ``[B, T]`` int64 -> ``logits``
    ``[B, T, C]`` float32) to ``path`` atomically.

    Raises:
        BertkitError: the export failed (an architecture the exporter cannot trace).
    """
    path = Path(path)
    ids = torch.tensor([[101, 2023, 2003, 102], [101, 2023, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    was_training = encoder.training
    encoder.eval()
    try:
        with atomic_path(path) as tmp, torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer notes on shapes the example fixes
            torch.onnx.export(_Logits(encoder), (ids, mask), str(tmp), dynamo=False,
                              input_names=["input_ids", "attention_mask"],
                              output_names=["logits"], opset_version=17,
                              dynamic_axes={"input_ids": {0: "batch", 1: "pieces"},
                                            "attention_mask": {0: "batch", 1: "pieces"},
                                            "logits": {0: "batch", 1: "pieces"}})
    except BertkitError:
        raise
    except Exception as exc:  # the exporter raises many types
        raise BertkitError(f"cannot export the model to ONNX: {type(exc).__name__}: {exc}",
                           file=path, expected="a BERT-style token-classification model") from None
    finally:
        encoder.train(was_training)
    return path


def weights_hashes(model_dir: str | Path) -> dict[str, str]:
    """``{file name: SHA-256 hex}`` of the weights files (``*.safetensors``) of ``model_dir``:
    what an export was made from (whole-file hashes: about a second for BERT-base's 440 MB)."""
    out = {}
    for f in sorted(Path(model_dir).glob("*.safetensors")):
        with f.open("rb") as handle:
            out[f.name] = hashlib.file_digest(handle, "sha256").hexdigest()
    return out


def record_path(path: str | Path) -> Path:
    """The record beside an export: ``model.onnx`` -> ``model.onnx.json``."""
    return Path(str(path) + ".json")


def made_from(path: str | Path) -> dict[str, str] | None:
    """The weights hashes an export records (:func:`weights_hashes`), or None: no readable
    record (an export of an older bertkit, or a record cut short)."""
    try:
        weights = json.loads(record_path(path).read_text(encoding="utf-8")).get("weights")
    except (OSError, ValueError, AttributeError):
        return None
    return weights if isinstance(weights, dict) else None


def _stale(path: Path, weights: dict[str, str]) -> str | None:
    """Why the export at ``path`` cannot serve ``weights`` (None: it can; missing: no reason)."""
    if not path.is_file():
        return None
    old = made_from(path)
    if old == weights:
        return None
    if old is None:
        return "it records no hash of the weights it was made from (an older export)"
    changed = sorted(k for k in set(old) | set(weights) if old.get(k) != weights.get(k))
    return "the weights differ from those it was made from (" + "; ".join(
        f"{k}: sha256 {str(old.get(k))[:12]} then, {str(weights.get(k))[:12]} now"
        for k in changed[:3]) + ")"


def _say(say: Callable[[str], None] | None, message: str) -> None:
    if say is not None:
        say(message)
    else:
        warnings.warn(message, stacklevel=3)


def cached_export(encoder: nn.Module, model_dir: str | Path, cache_dir: str | Path | None = None,
                  say: Callable[[str], None] | None = None) -> Path:
    """``model.onnx`` for the saved model in ``model_dir``: reused if its record
    (``model.onnx.json``) holds the hashes of the weights now in ``model_dir``
    (:func:`weights_hashes`), else exported there (or into ``cache_dir`` where ``model_dir`` is
    not writable) with a new record; a rebuild of an existing export is said (``say``, else a
    warning) with the reason.

    Raises:
        BertkitError: the export failed, or no folder could be written.
    """
    model_dir = Path(model_dir)
    weights = weights_hashes(model_dir)
    for folder in (model_dir, Path(cache_dir) if cache_dir else None):
        if folder is None:
            continue
        path = folder / ONNX_FILE
        why = _stale(path, weights)
        if path.is_file() and why is None:
            return path
        try:
            export_onnx(encoder, path)
            write_text(record_path(path), json.dumps({"weights": weights}, indent=1) + "\n")
        except (BertkitError, OSError) as exc:
            if folder == model_dir and cache_dir:
                continue
            if isinstance(exc, BertkitError):
                raise
            raise BertkitError(f"cannot write the ONNX export: {exc.strerror or exc}", file=path,
                               expected="a writable model folder or cache folder") from None
        if why is not None:
            _say(say, f"{path}: exported again from {model_dir}: {why}")
        return path
    raise BertkitError("no writable folder for the ONNX export", file=model_dir)


class OnnxScorer:
    """Token-classification logits from an ONNX Runtime session.

    Args:
        path: an exported ``model.onnx`` (:func:`export_onnx`).
        threads: ONNX Runtime intra-op threads (1: one core, as ``torch.set_num_threads(1)``).
        quantized: run an int8 dynamic-quantised copy (:func:`quantize`: MatMul weights int8
            per channel, activations quantised per batch), written beside ``path``.

    Raises:
        BertkitError: onnxruntime missing, or the file cannot be loaded.
    """

    def __init__(self, path: str | Path, threads: int = 1, quantized: bool = False,
                 say: Callable[[str], None] | None = None) -> None:
        ort = require_onnxruntime()
        path = Path(path)
        if quantized:
            path = quantize(path, say)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, threads)
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            self.session = ort.InferenceSession(str(path), opts,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise BertkitError(f"cannot load the ONNX model: {exc}", file=path) from None

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 word_pos: torch.Tensor) -> torch.Tensor:
        """Scores at ``word_pos``: ``[B, T]`` pieces and mask, ``[B, K]`` positions ->
        ``[B, K, C]`` float32 (a torch tensor on the CPU)."""
        logits = self.session.run(["logits"], {
            "input_ids": input_ids.cpu().numpy().astype(np.int64),
            "attention_mask": attention_mask.cpu().numpy().astype(np.int64)})[0]
        logits = torch.from_numpy(logits)
        return logits.gather(1, word_pos.cpu().unsqueeze(2).expand(-1, -1, logits.shape[2]))


QUANTIZE_SETTINGS = {"op_types_to_quantize": ["MatMul"], "per_channel": True, "reduce_range": True}
"""``quantize_dynamic`` settings of ``--backend onnx-int8``, chosen on BC5CDR dev among seven
variants (``benchmarks/int8_variants.py``; the smallest dev F1 loss, 0.24; BC5CDR test 0.21 below
fp32, inside the issue's 0.3): the MatMuls only (the embedding lookup stays fp32), per-channel
weight scales, 7-bit weights (``reduce_range``: no u8 x s8 overflow in AVX2's ``vpmaddubsw`` on
CPUs without VNNI; ONNX Runtime's quantisation guide). The default settings lost 1.0 F1."""

INT8_SUFFIX = ".int8-matmul-pc-rr.onnx"
"""The int8 copy's name beside ``model.onnx`` (a new name when :data:`QUANTIZE_SETTINGS`
change, so that an older copy is never reused)."""


def quantize(path: Path, say: Callable[[str], None] | None = None) -> Path:
    """An int8 dynamic-quantised copy of ``path`` (``model`` + :data:`INT8_SUFFIX` beside it,
    atomic) with :data:`QUANTIZE_SETTINGS`: weights int8 ahead of time, activations quantised
    per batch (ONNX Runtime's dynamic quantisation). Its record holds what ``path``'s holds (the
    weights hashes; else ``path``'s own SHA-256): reused while they agree, remade (said:
    ``say``, else a warning) when they do not."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = path.with_name(path.stem + INT8_SUFFIX)
    source = made_from(path)
    if source is None:
        with path.open("rb") as handle:
            source = {path.name: hashlib.file_digest(handle, "sha256").hexdigest()}
    why = _stale(out, source)
    if out.is_file() and why is None:
        return out
    with atomic_path(out) as tmp:
        quantize_dynamic(str(path), str(tmp), weight_type=QuantType.QInt8, **QUANTIZE_SETTINGS)
    write_text(record_path(out), json.dumps({"weights": source}, indent=1) + "\n")
    if why is not None:
        _say(say, f"{out}: quantised again from {path.name}: {why}")
    return out
