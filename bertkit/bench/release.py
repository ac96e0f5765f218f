"""Small release artefacts of bertkit-pretrained encoders (issue 43): fp16 safetensors with the
vocabulary, the tokenizer files, the provenance and a short model card, so a suite runs on them
anywhere in minutes instead of pretraining them again.

The weights are stored in half precision (half the bytes; a 2 x 128 encoder with an 8 k
vocabulary is about 3 MB) while ``config.json`` says ``"dtype": "float32"``: transformers 5
loads a checkpoint in ``config.dtype`` when no ``dtype`` is passed (its default ``"auto"``), so
every ``from_pretrained`` (bertkit's task loaders, a user's ``AutoModel``) upcasts the fp16
tensors to fp32 on load and CPU training runs in fp32 as before. The cast is the only loss:
each weight is rounded to the nearest fp16 value (relative error <= 2**-11, ~4.9e-4).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from bertkit.errors import BertkitError
from bertkit.io import write_text
from bertkit.data.lineage import read_meta

WEIGHTS = "model.safetensors"
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json")
PROVENANCE = "provenance.json"
FP16_RELATIVE = 2.0 ** -11  # unit roundoff of IEEE half precision (10-bit mantissa)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def wordpiece_vocab(tokenizer_json: Path) -> str:
    """The ``vocab.txt`` (one piece a line, in id order) of a WordPiece ``tokenizer.json``
    (transformers 5 saves a fast tokenizer without it), so the release names its vocabulary."""
    vocab = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]["vocab"]
    return "".join(piece + "\n" for piece, _ in sorted(vocab.items(), key=lambda kv: kv[1]))


def lineage(model: Path) -> list[dict]:
    """The encoder's history, itself first (:func:`bertkit.data.lineage.model_lineage`): each model
    it was made from with its corpora (registered names where possible) and masking, from the
    lineage its ``bertkit.json`` carries (an older record's ``base_model`` followed while the
    parent folder exists)."""
    from bertkit.data.lineage import model_lineage

    return model_lineage(model)


def export_encoder(model: str | Path, out: str | Path, name: str,
                   provenance: dict[str, Any] | None = None, overwrite: bool = False) -> Path:
    """Write the release form of a saved encoder to ``out``.

    Args:
        model: a ``save_pretrained`` folder with ``config.json`` and ``model.safetensors``
            (``bertkit pretrain``'s ``RUN/model``).
        out: the release folder (``benchmarks/encoders/NAME``); written beside and renamed into
            place, so a stopped export leaves nothing half-written.
        name: the encoder's name (``S``, ``G+D``), in the card and the provenance.
        provenance: more to record (the recipe command, the plan stage, the token budget);
            ``pretraining_tokens: 0`` marks initial weights, released with no corpora (they saw
            none: no contamination to count).
        overwrite: replace an existing ``out``.

    Returns:
        ``out``.

    Raises:
        BertkitError: ``model`` lacks ``config.json`` or ``model.safetensors``; ``out`` exists
            and ``overwrite`` is not set.
    """
    import torch
    from safetensors.torch import load_file, save_file

    from bertkit.bench.encoders import fingerprint
    from bertkit.outputs.provenance import git_commit, package_versions

    model, out = Path(model).expanduser(), Path(out).expanduser()
    if not (model / "config.json").is_file() or not (model / WEIGHTS).is_file():
        raise BertkitError(f"{model} is not a saved encoder", file=model,
                           expected=f"a folder with config.json and {WEIGHTS}")
    if out.exists() and not overwrite:
        raise BertkitError(f"{out} exists", file=out, expected="a new folder, or overwrite")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors = load_file(str(model / WEIGHTS))
    half = {k: (v.to(torch.float16) if v.is_floating_point() else v).contiguous()
            for k, v in tensors.items()}
    save_file(half, str(tmp / WEIGHTS), metadata={"format": "pt"})
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config.pop("torch_dtype", None)
    config["dtype"] = "float32"  # load (upcast) as fp32: see the module docstring
    write_text(tmp / "config.json", json.dumps(config, indent=2) + "\n")
    for f in TOKENIZER_FILES:
        if (model / f).is_file():
            shutil.copy2(model / f, tmp / f)
    if not (tmp / "vocab.txt").is_file() and (tmp / "tokenizer.json").is_file():
        write_text(tmp / "vocab.txt", wordpiece_vocab(tmp / "tokenizer.json"))
    history = lineage(model)
    corpora = list(dict.fromkeys(c for entry in history for c in entry["corpus"]))
    untrained = (provenance or {}).get("pretraining_tokens") == 0
    if untrained:  # initial weights (R): the run's corpus was never read into them
        corpora, history = [], [{**h, "corpus": []} for h in history]
    meta = read_meta(model)
    if meta:  # bench's contamination check reads corpus here (a parent folder is not shipped)
        meta = {k: v for k, v in meta.items() if k != "base_model"}
        meta["corpus"] = ",".join(corpora)
        meta["lineage"], meta["corpora"] = history, corpora  # the whole lineage, no paths
        if untrained:
            meta["steps"] = 0
            meta["note"] = "initial weights, no pretraining step: no corpus seen"
        write_text(tmp / "bertkit.json", json.dumps(meta, indent=2) + "\n")
    record = {"name": name, "source": str(model), "source_fingerprint": fingerprint(model),
              "weights_sha256": _sha256(tmp / WEIGHTS), "dtype_stored": "float16",
              "dtype_loaded": "float32", "parameters": sum(v.numel() for v in tensors.values()),
              "corpora": corpora, "lineage": history, "bertkit_commit": git_commit(),
              "packages": package_versions(("bertkit", "torch", "transformers", "tokenizers")),
              **(provenance or {})}
    write_text(tmp / PROVENANCE, json.dumps(record, indent=1, default=str) + "\n")
    write_text(tmp / "README.md", card(record, config))
    if out.exists():
        shutil.rmtree(out)
    tmp.replace(out)
    return out


def card(record: dict, config: dict) -> str:
    """The release's short model card (Markdown): what it is, how it was made, how to use it."""
    size = (f"{config.get('num_hidden_layers')} layers x {config.get('hidden_size')} hidden, "
            f"vocabulary {config.get('vocab_size')}")
    return "\n".join([
        f"# bertkit miniature encoder {record['name']}", "",
        (f"A {size} BERT encoder ({record['parameters']:,} parameters) pretrained by bertkit for "
         "its miniature domain-adaptation study (benchmarks/reproduce.py, issue 43). A research "
         "artefact for comparing pretraining routes, not a model for production use."), "",
        f"- Pretraining corpora: {', '.join(record['corpora']) or ('none: initial weights, never pretrained' if record.get('pretraining_tokens') == 0 else 'none recorded')}",
        (f"- Weights stored in fp16 (sha256 {record['weights_sha256'][:16]}...), loaded as fp32 "
         "(config.json `dtype`); rounding error <= 2^-11 relative per weight."),
        "- Provenance (commands, lineage, versions): provenance.json", "",
        "## Use", "", "```python", "from transformers import AutoModel, AutoTokenizer",
        "model = AutoModel.from_pretrained('PATH')  # fp32", "tok = AutoTokenizer.from_pretrained('PATH')",
        "```", "", ("With bertkit: give PATH to `bertkit bench run mini` as one of its encoders "
                    "(benchmarks/README.md, the reproduction through recipes and bench)."), ""])


def verify(release: str | Path, source: str | Path | None = None) -> dict:
    """Check a release folder: its weights hash matches the provenance and (with ``source``)
    every tensor equals the source's rounded to fp16. Returns ``{"bytes", "max_abs_diff"}``.

    Raises:
        BertkitError: a missing file, a hash or tensor mismatch.
    """
    import torch
    from safetensors.torch import load_file

    release = Path(release)
    try:
        record = json.loads((release / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BertkitError(f"{release} has no readable {PROVENANCE}", file=release,
                           expected="a folder written by export_encoder") from None
    if _sha256(release / WEIGHTS) != record.get("weights_sha256"):
        raise BertkitError(f"{release / WEIGHTS} does not match its provenance's sha256",
                           file=release / WEIGHTS, expected="the weights export_encoder wrote")
    worst = 0.0
    if source is not None:
        half, full = load_file(str(release / WEIGHTS)), load_file(str(Path(source) / WEIGHTS))
        if set(half) != set(full):
            raise BertkitError(f"{release}: tensor names differ from {source}", file=release)
        for k, v in full.items():
            if v.is_floating_point():
                worst = max(worst, (half[k].float() - v.float()).abs().max().item())
                if not torch.equal(half[k], v.to(torch.float16)):
                    raise BertkitError(f"{release}: {k} is not {source}'s rounded to fp16",
                                       file=release)
    return {"bytes": sum(f.stat().st_size for f in release.iterdir()), "max_abs_diff": worst}
