"""Length settings against the encoder's position table (one check for every command).

A BERT-style encoder has ``max_position_embeddings`` learned positions; an input longer than
that fails deep inside the embedding layer (``index 512 is out of bounds``). RoBERTa-style
models number positions from ``padding_idx + 1`` (fairseq's convention), so of their 514 rows
only 512 are usable. :func:`position_limit` gives the usable count; :func:`check_length` refuses
a larger setting before anything is written, with the same one-line message ``pretrain`` gives;
:func:`fit_length` clamps a saved model's length with a warning (evaluate/predict).
"""

from __future__ import annotations

from bertkit.errors import BertkitError

OFFSET_MODEL_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "longformer",
                                "roberta-prelayernorm", "xmod", "data2vec-text", "ibert",
                                "luke", "mpnet"})
"""Architectures whose position ids start at ``pad_token_id + 1`` (fairseq/RoBERTa numbering)."""


def position_limit(config) -> int | None:
    """Usable input length (pieces, special tokens included) of a model with ``config``.

    Returns:
        ``max_position_embeddings`` less ``pad_token_id + 1`` for RoBERTa-style models
        (:data:`OFFSET_MODEL_TYPES`); None when the config sets no position table (relative
        positions, e.g. DeBERTa-v2 without absolute embeddings).

    >>> from types import SimpleNamespace as C
    >>> position_limit(C(model_type="bert", max_position_embeddings=512))
    512
    >>> position_limit(C(model_type="roberta", max_position_embeddings=514, pad_token_id=1))
    512
    """
    n = getattr(config, "max_position_embeddings", None)
    if not isinstance(n, int) or n <= 0:
        return None
    if getattr(config, "model_type", None) in OFFSET_MODEL_TYPES:
        n -= (getattr(config, "pad_token_id", None) or 1) + 1
    if getattr(config, "position_embedding_type", "absolute") not in ("absolute", None) or \
            getattr(config, "position_biased_input", True) is False:
        return None
    return n


def model_position_limit(model: str) -> int | None:
    """:func:`position_limit` of the encoder at ``model`` (directory or hub id), from its
    ``config.json`` only (no weights loaded); None when the config cannot be read (the model
    loader reports that itself)."""
    from transformers import AutoConfig

    from bertkit.encoders import quiet_transformers

    quiet_transformers()
    try:
        config = AutoConfig.from_pretrained(model)
    except Exception:  # noqa: BLE001 - an unreadable model is reported by its loader
        return None
    return position_limit(config)


def check_length(length: int, limit: int | None, option: str = "--max-length") -> None:
    """Refuse a length setting the encoder cannot embed.

    Args:
        length: the setting (pieces per input, special tokens included).
        limit: the encoder's usable positions (:func:`position_limit`); None: no limit known.
        option: the flag or recipe key named in the message.

    Raises:
        BertkitError: ``length > limit``: "--max-length 1024 exceeds the model's 512 positions
            (expected at most 512)", as ``pretrain`` says for ``--max-seq-length``.
    """
    if limit is not None and length > limit:
        raise BertkitError(f"{option} {length} exceeds the model's {limit} positions",
                           expected=f"at most {limit}")


def fit_length(length: int, limit: int | None, console=None, what: str = "max_length") -> int:
    """``length`` clamped to ``limit``, with a warning when it had to be (a saved model whose
    recorded length is larger than its encoder's position table)."""
    if limit is None or length <= limit:
        return length
    if console is not None:
        console.print(f"[yellow]warning:[/] {what} {length} exceeds the model's {limit} "
                      f"positions; using {limit}", highlight=False)
    return limit
