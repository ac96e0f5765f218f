"""Which pretraining corpus an encoder saw, and the warning when it holds the test sentences.

An encoder pretrained (``bertkit pretrain``/``adapt``) on ``$BERTKIT_DATA/corpus/train.txt`` has
seen, unlabelled, nearly all of BC2GM's test sentences (4,864 of 4,939; the data README counts
them per set, :data:`bertkit.data.published.CONTAMINATION`). Its scores on such a set are not
comparable with a clean encoder's (the README: filter the corpus against the test set, or leave
the set out of claims), so a fine-tuning run says so with the count.

Provenance: a saved ``pretrain`` model's ``bertkit.json`` records its ``corpus`` (a path, or
several joined by commas) and ``base_model``; models saved before it did are read through their
run directory's ``results.json`` (``corpus``). A fine-tuned model's ``base_model`` is followed
too, so an encoder's whole chain (DAPT on DAPT, ...) is checked.
"""

from __future__ import annotations

import json
from pathlib import Path

from bertkit.data.sets import CORPORA, data_root, entry

META_FILE = "bertkit.json"


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def pretraining_corpora(model: str | None, depth: int = 8) -> list[str]:
    """The corpus files the encoder at ``model`` (a directory) and its base models were
    pretrained on by bertkit, as recorded; [] for a hub id or an encoder without a record.

    Args:
        depth: how many ``base_model`` links to follow at most (a guard against loops).
    """
    out: list[str] = []
    seen: set[str] = set()
    while model and depth > 0 and model not in seen:
        seen.add(model)
        depth -= 1
        path = Path(model).expanduser()
        if not path.is_dir():
            break
        if (path / "model" / META_FILE).is_file():
            path = path / "model"
        meta = _read_json(path / META_FILE)
        corpus = meta.get("corpus") or (
            _read_json(path.parent / "results.json").get("corpus")
            if meta.get("task") == "pretrain" else None)
        if isinstance(corpus, str):
            out += [c.strip() for c in corpus.split(",") if c.strip()]
        model = meta.get("base_model") if isinstance(meta.get("base_model"), str) else None
    return out


def _same_file(a: str, b: Path) -> bool:
    try:
        return Path(a).expanduser().resolve() == b.resolve() or Path(a).samefile(b)
    except OSError:
        return False


def corpora_seen(model: str | None) -> list[str]:
    """The registered corpus names (:data:`bertkit.data.sets.CORPORA`: ``scientific``, ...)
    whose ``train.txt`` under ``$BERTKIT_DATA`` the encoder at ``model`` was pretrained on."""
    root = data_root()
    if root is None:
        return []
    files = pretraining_corpora(model)
    return [name for name, (folder, _) in CORPORA.items()
            if any(_same_file(f, root / folder / "train.txt") for f in files)]


def contamination_warning(task: str, data: str, model: str | None) -> str | None:
    """The warning for fine-tuning ``model`` on the registered set ``data`` of ``task`` when
    the encoder was pretrained on a corpus that holds some of the set's test sentences
    (:attr:`bertkit.data.sets.DatasetEntry.contamination`); None otherwise (no count, no test
    sentence found, another corpus, an unregistered set).

    >>> contamination_warning("ner", "bc2gm", None) is None  # the packaged encoder: no record
    True
    """
    found = entry(task, data)
    counts = found.contamination if found else None
    if counts is None or counts.test == 0 or counts.corpus not in corpora_seen(model):
        return None
    return (f"the encoder was pretrained on the {counts.corpus} corpus "
            f"({CORPORA[counts.corpus][0]}/train.txt), which holds {counts.sentence()} of "
            f"{data}: it has seen them unlabelled, so its test score is contaminated (filter the "
            f"corpus against the test set, or leave {data} out of claims)")


def check_contamination(task: str, data: str, model: str | None, console=None) -> dict:
    """Print :func:`contamination_warning` (when there is one) and return it for
    ``results.json``: ``{"contamination": {"corpus", "test", "test_total", "dev",
    "dev_total", "warning"}}``, or ``{}``."""
    warning = contamination_warning(task, data, model)
    if warning is None:
        return {}
    if console is not None:
        from rich.markup import escape

        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    counts = entry(task, data).contamination
    return {"contamination": {"corpus": counts.corpus, "test": counts.test,
                              "test_total": counts.test_total, "dev": counts.dev,
                              "dev_total": counts.dev_total, "warning": warning}}
