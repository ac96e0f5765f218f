"""Whether a model folder's tokenizer is the model's own (issue 45, kind 7).

A vocabulary swapped into a model folder (google-research/bert#406, transformers#3097) loads
without a word: each id then reads the embedding row another word was trained on ("aspirin"
reading "luxury"). Before anything is trained, the tokenizer is compared with the model's
``config.json`` (no weights loaded):

* size: more tokens than embedding rows, or fewer than the rows less padding (a table rounded up
  to a multiple of 8 to 128 is padding, not another vocabulary);
* special-token ids: ``pad``/``bos``/``eos`` in the config against the tokenizer's;
* for a model bertkit saved: the checksum of its vocabulary, recorded as ``vocab_sha256`` in
  ``bertkit.json`` (:func:`vocab_checksum`), against the tokenizer's.

A vocabulary meant to replace the model's is resized in on purpose: ``bertkit vocab extend``, or
``model.resize_token_embeddings(len(tokenizer))`` and ``save_pretrained`` (the config then
agrees with the tokenizer).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bertkit.errors import BertkitError

PADDING = (8, 16, 32, 64, 128)  # embedding tables rounded up to a multiple of these


def vocab_checksum(tokenizer) -> str:
    """SHA-256 (16 hex digits) of the tokenizer's ``token -> id`` map, added tokens included."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: (kv[1], kv[0]))
    return hashlib.sha256(json.dumps(vocab, ensure_ascii=False).encode()).hexdigest()[:16]


def padded(tokens: int, rows: int) -> bool:
    """Whether ``rows`` embedding rows are ``tokens`` rounded up to a multiple of :data:`PADDING`.

    >>> padded(30522, 30522), padded(50257, 50304), padded(31090, 30522), padded(28996, 30522)
    (True, True, False, False)
    """
    return rows == tokens or any(rows == -(-tokens // m) * m for m in PADDING)


def tokenizer_mismatch(config, tokenizer, meta: dict | None = None) -> list[str]:
    """What does not match between a model's ``config`` and ``tokenizer`` (empty: they match);
    ``meta``: the model's ``bertkit.json`` when bertkit saved it."""
    problems = []
    rows, tokens = getattr(config, "vocab_size", None), len(tokenizer)
    if isinstance(rows, int) and tokens > rows:
        problems.append(f"the tokenizer has {tokens} tokens but the model {rows} embedding rows "
                        f"(ids from {rows} have none)")
    elif isinstance(rows, int) and not padded(tokens, rows):
        problems.append(f"the tokenizer has {tokens} tokens but the model {rows} embedding rows "
                        f"(another vocabulary: its ids would read rows trained for other words)")
    for name in ("pad", "bos", "eos"):
        want, got = getattr(config, f"{name}_token_id", None), getattr(tokenizer,
                                                                        f"{name}_token_id", None)
        if isinstance(want, int) and isinstance(got, int) and want != got:
            problems.append(f"the model's {name} token id is {want}, the tokenizer's {got}")
    saved = (meta or {}).get("vocab_sha256")
    if saved and saved != vocab_checksum(tokenizer):
        problems.append(f"the vocabulary's checksum is {vocab_checksum(tokenizer)}, not the "
                        f"{saved} the model was trained with (bertkit.json)")
    return problems


def check_tokenizer_matches(model: str, tokenizer=None) -> None:
    """Refuse a model folder whose tokenizer is not the model's own (module docstring); a model
    whose config cannot be read is left to its loader to report.

    Raises:
        BertkitError: naming the folder, both sizes and what differs.
    """
    from transformers import AutoConfig

    from bertkit.encoders import load_tokenizer, quiet_transformers, resolve_model_source

    quiet_transformers()
    path = resolve_model_source(model)
    try:
        config = AutoConfig.from_pretrained(path)
    except Exception:  # noqa: BLE001 - an unreadable model is reported by its loader
        return
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer(path)
    meta_file = Path(str(path)).expanduser() / "bertkit.json"
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else None
    except (OSError, ValueError):
        meta = None
    problems = tokenizer_mismatch(config, tokenizer, meta if isinstance(meta, dict) else None)
    if problems:
        raise BertkitError(
            "the tokenizer files are not the model's own: " + "; ".join(problems), file=path,
            expected="the tokenizer the model was trained with; a new vocabulary resized in on "
                     "purpose (bertkit vocab extend, or resize_token_embeddings(len(tokenizer)) "
                     "and save_pretrained)")
