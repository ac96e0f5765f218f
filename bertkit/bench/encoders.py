"""The encoders a bench run judges: ``NAME=MODEL`` parsed, checked and fingerprinted.

MODEL is anything ``--model`` takes (a local directory, a cached hub id) or ``minilm`` for the
packaged MiniLM-L6-H384. The fingerprint (SHA-256 over ``config.json`` and the weight files) is
what a rerun compares: the same name must mean the same weights.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from bertkit.errors import BertkitError

PACKAGED = ("minilm", "packaged")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
WEIGHTS = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class Encoder:
    """An encoder under test: its name in the report, MODEL as given, the resolved directory,
    its fingerprint and (when bertkit pretrained it) the corpora its provenance names."""

    name: str
    model: str
    path: str
    fingerprint: str
    corpora: tuple[str, ...] = ()


def parse_spec(spec: str) -> tuple[str, str]:
    """``"NAME=MODEL"`` -> ``(NAME, MODEL)``.

    Raises:
        BertkitError: no ``=``, an empty side, or a name with other characters than letters,
            digits and ``_ . + -`` (it names folders).
    """
    name, sep, model = spec.partition("=")
    name, model = name.strip(), model.strip()
    if not sep or not name or not model:
        raise BertkitError(f"--encoder {spec!r} is not NAME=MODEL",
                           expected="e.g. --encoder scibert=path/to/model")
    if not NAME.match(name):
        raise BertkitError(f"encoder name {name!r} has characters a folder name cannot hold",
                           expected="letters, digits and _ . + -")
    return name, model


def fingerprint(path: Path) -> str:
    """SHA-256 over the directory's ``config.json`` and weight files (names and bytes)."""
    h = hashlib.sha256()
    for name in ("config.json",) + WEIGHTS:
        f = path / name
        if f.is_file():
            h.update(name.encode())
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def _corpora(path: Path) -> tuple[str, ...]:
    """The pretraining corpora of the encoder and of every model it was made from, from the
    lineage its own ``bertkit.json`` carries (:mod:`bertkit.data.lineage`; an older record is
    followed through ``base_model``). Registered names (``scientific``) become files under
    ``$BERTKIT_DATA``."""
    from bertkit.data.sets import resolve_corpus
    from bertkit.data.lineage import lineage_corpora, model_lineage

    found: list[str] = []
    for part in lineage_corpora(model_lineage(path)):
        try:
            found.append(resolve_corpus(part))
        except BertkitError:
            found.append(part)
    return tuple(dict.fromkeys(found))


def resolve(name: str, model: str) -> Encoder:
    """Check that MODEL is an encoder and fingerprint it.

    Raises:
        BertkitError: a path that does not exist; a directory without a readable
            ``config.json`` (not a transformers model) or without weights; a hub id neither
            cached nor reachable.
    """
    from bertkit.encoders import default_model, resolve_model_source

    source = default_model() if model in PACKAGED else model
    looks_like_path = "/" in source and not re.match(r"^[\w.-]+/[\w.-]+$", source) \
        or source.startswith((".", "~"))
    if looks_like_path and not Path(source).expanduser().exists():
        raise BertkitError(f"encoder {name}: {model} does not exist", file=model,
                           expected="a model directory, a cached hub id or 'minilm'")
    path = Path(resolve_model_source(source)).expanduser().resolve()
    if not path.is_dir():
        raise BertkitError(f"encoder {name}: {model} is not a directory", file=model,
                           expected="a model directory (config.json, weights, tokenizer)")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        hint = (f"; {path / 'model'} holds one: a run directory's model is its model/ folder"
                if (path / "model" / "config.json").is_file() else "")
        raise BertkitError(f"encoder {name}: {model} is not an encoder (no readable "
                           f"config.json){hint}", file=path,
                           expected="a transformers model directory") from None
    if "model_type" not in config or not any((path / w).is_file() for w in WEIGHTS):
        raise BertkitError(f"encoder {name}: {model} is not an encoder (no model_type or no "
                           "weights)", file=path,
                           expected="config.json with model_type and " + " or ".join(WEIGHTS))
    return Encoder(name, model, str(path), fingerprint(path), _corpora(path))


def resolve_all(specs: list[str]) -> list[Encoder]:
    """Every ``--encoder NAME=MODEL``, checked before anything runs.

    Raises:
        BertkitError: no encoder, two encoders with one name, or a bad one (:func:`resolve`).
    """
    if not specs:
        raise BertkitError("no encoder to judge", expected="--encoder NAME=MODEL (one or more)")
    pairs = [parse_spec(s) for s in specs]
    names = [n for n, _ in pairs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BertkitError(f"two encoders named {', '.join(twice)}",
                           expected="a distinct NAME for each --encoder NAME=MODEL")
    return [resolve(n, m) for n, m in pairs]
