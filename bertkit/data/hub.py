"""Loading a registered set from the Hugging Face hub (only where a network exists)."""

from __future__ import annotations

from bertkit.data.conll import Sentence
from bertkit.data.tagging import detect_scheme, parse_tag, to_iob2

_HUB_SPLITS = {"train": ("train",), "dev": ("validation", "dev", "valid"), "test": ("test",)}


def hub_splits(hub_id: str, splits: tuple[str, ...]) -> dict | None:
    """``{split: (hub split name, datasets.Dataset)}`` of the hub set ``hub_id`` for ``splits``
    (``dev`` read from ``validation``, ``dev`` or ``valid``); None when the hub cannot be reached,
    the set does not load, or a split is missing, so that the caller can say what to set instead.
    """
    from bertkit.encoders import hub_reachable

    if not hub_id or not hub_reachable():
        return None
    try:
        import datasets

        ds = datasets.load_dataset(hub_id)
    except Exception:  # offline, unknown id, or a script-based set that datasets no longer runs
        return None
    out = {}
    for split in splits:
        name = next((n for n in _HUB_SPLITS[split] if n in ds), None)
        if name is None:
            return None
        out[split] = (name, ds[name])
    return out


def load_hub_ner(hub_id: str, splits: tuple[str, ...]) -> dict[str, list[Sentence]] | None:
    """Sentences of ``hub_id`` (``tokens`` + ``ner_tags``/``tags`` columns) per split, in IOB2.

    Returns None when the hub cannot be reached or the set has no such columns, so that the
    caller can report what to set instead.
    """
    parts = hub_splits(hub_id, splits)
    if parts is None:
        return None
    out = {}
    for split, (name, part) in parts.items():
        column = next((c for c in ("ner_tags", "tags") if c in part.column_names), None)
        if column is None or "tokens" not in part.column_names:
            return None
        feature = part.features[column].feature
        names = getattr(feature, "names", None)
        sentences = []
        for i, row in enumerate(part):
            tags = [names[t] if names else str(t) for t in row[column]]
            where = f"hub:{hub_id}/{name}"
            parsed = [parse_tag(t, file=where, line=i + 1) for t in tags]
            sentences.append(Sentence(list(row["tokens"]), to_iob2(parsed, detect_scheme([parsed])),
                                      where, i + 1))
        out[split] = sentences
    return out
