"""An encoder's lineage, carried in its own folder: every model it was made from, each with the
corpora it was pretrained on, so that its record does not depend on paths that exist only where
it was made.

Every encoder folder bertkit writes (``bertkit pretrain``'s ``RUN/model``, continued pretraining,
``bertkit vocab extend``'s output) records in its ``bertkit.json``::

    "lineage": [{"name": "G+D37sv", "made_by": "pretrain", "corpus": ["scientific"], ...},
                {"name": "G-ext", "made_by": "vocab extend", "corpus": []},
                {"name": "G", "made_by": "pretrain", "corpus": ["general"], ...}],
    "corpora": ["scientific", "general"]

itself first, the base model's whole lineage copied from the base's own record (not linked by
path), and ``corpora`` the union: what a model pretrained on top of it saw too (Gururangan et al.
2020, section 3: domain-adaptive pretraining continues the base's training, so the base's corpora
are in the result; mteb PR #5037 asks for the same record to judge contamination). A corpus file
under ``$BERTKIT_DATA`` is named by its registered name (``scientific``), any other by its
absolute path. Folders written before this record are read from their older fields
(``corpus``, ``base_model`` followed while the folder exists, ``extend.json``'s ``model``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

META_FILE = "bertkit.json"
MAX_DEPTH = 16  # base links followed at most in an old record (a guard against loops)


def read_meta(path: Path, name: str = META_FILE) -> dict:
    """The JSON object in ``path / name``; {} when missing, unreadable or not an object."""
    try:
        value = json.loads((Path(path) / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def portable_corpus(path: str) -> str:
    """A corpus (a registered name or a file) as the lineage names it: a file under
    ``$BERTKIT_DATA`` as its registered name (``scientific``), another file as its absolute
    path, a name unchanged."""
    from bertkit.data.sets import CORPORA, data_root

    root = data_root()
    if path in CORPORA and not Path(path).exists():
        return path
    if root is not None:
        for name, (folder, _) in CORPORA.items():
            try:
                if Path(path).expanduser().resolve() == (root / folder / "train.txt").resolve():
                    return name
            except OSError:
                pass
    return str(Path(path).expanduser().resolve()) if Path(path).expanduser().exists() else path


def corpus_list(spec: Any) -> list[str]:
    """A ``--corpus`` value (comma-separated, or a list) as portable corpus names."""
    from bertkit.data.sets import split_paths

    parts = spec if isinstance(spec, list) else split_paths(str(spec or ""))
    return [portable_corpus(str(p)) for p in parts if str(p).strip()]


def model_name(model: str | Path) -> str:
    """How a lineage names a model: a run's ``RUN/model`` by the run folder, another folder by
    its name, the packaged encoder as ``minilm``, a hub id as given."""
    path = Path(str(model)).expanduser()
    if not path.is_dir():
        return str(model)
    try:
        from bertkit.encoders import default_model

        if path.resolve() == Path(default_model()).resolve():
            return "minilm"
    except (ImportError, OSError):
        pass
    path = path.resolve()
    return path.parent.name if path.name == "model" else path.name


def model_lineage(model: str | Path | None, depth: int = 0) -> list[dict]:
    """The lineage of the encoder at ``model`` (a folder, a run folder, a hub id), itself
    first: its ``bertkit.json`` ``lineage`` where recorded; else rebuilt from an older record;
    a model bertkit did not make is one entry without corpora (``made_by`` absent). [] for
    None."""
    if model in (None, ""):
        return []
    path = Path(str(model)).expanduser()
    if not path.is_dir():
        return [{"name": str(model), "corpus": []}]
    if (path / "model" / META_FILE).is_file():
        path = path / "model"
    meta = read_meta(path)
    if isinstance(meta.get("lineage"), list) and meta["lineage"]:
        return meta["lineage"]
    entry: dict[str, Any] = {"name": model_name(path), "corpus": []}
    base = None
    if meta:
        task = meta.get("task")
        corpus = meta.get("corpus")
        if not corpus and task == "pretrain":  # saved before bertkit.json recorded it
            corpus = read_meta(path.parent, "results.json").get("corpus")
        entry.update(made_by=task, corpus=corpus_list(corpus) if task == "pretrain" else [],
                     **{k: meta[k] for k in ("masking", "steps") if k in meta})
        base = meta.get("base_model")
    elif (path / "extend.json").is_file():  # a vocab extend folder of an earlier version
        entry["made_by"] = "vocab extend"
        base = read_meta(path, "extend.json").get("model")
    parents = model_lineage(str(base), depth + 1) if (
        isinstance(base, str) and base and depth < MAX_DEPTH) else []
    return [entry, *parents]


def lineage_corpora(lineage: list[dict]) -> list[str]:
    """Every corpus of a lineage, in order, once."""
    return list(dict.fromkeys(c for e in lineage for c in (e.get("corpus") or [])
                              if isinstance(c, str)))


def lineage_record(step: dict, base: str | Path | None) -> dict:
    """``{"lineage", "corpora"}`` for a new encoder folder's ``bertkit.json``: ``step`` (its own
    entry: ``name``, ``made_by``, ``corpus``, ...) on top of the base model's lineage."""
    lineage = [step, *model_lineage(base)]
    return {"lineage": lineage, "corpora": lineage_corpora(lineage)}
