"""A registered sentence-classification set from the Hugging Face hub (``datasets``), when the
set is not under ``$BERTKIT_DATA`` and the hub can be reached. Moved out of
:mod:`bertkit.tasks.cls.data`."""

from __future__ import annotations

from bertkit.data.text import normalize_label
from bertkit.tasks.cls.examples import Columns, TextExample


def load_hub(hub_id: str, splits: tuple[str, ...], cols: Columns) -> dict | None:
    """Examples of a registered set from the Hugging Face hub (``datasets``), or None offline.

    The text is the first of ``cols.text``, ``string``, ``sentence``, ``text`` the set has;
    a ``ClassLabel`` label is turned into its name.
    """
    from bertkit.encoders import hub_reachable

    if not hub_id or not hub_reachable():
        return None
    try:
        import datasets

        ds = datasets.load_dataset(hub_id)
    except Exception:  # noqa: BLE001 - offline, unknown id, or a script-based set
        return None
    names = {"train": ("train",), "dev": ("validation", "dev", "valid"), "test": ("test",)}
    out = {}
    for split in splits:
        name = next((n for n in names[split] if n in ds), None)
        if name is None:
            return None
        part = ds[name]
        text_col = next((c for c in (cols.text, "string", "sentence", "text")
                         if c in part.column_names), None)
        if text_col is None or cols.label not in part.column_names:
            return None
        label_names = getattr(part.features[cols.label], "names", None)
        out[split] = [TextExample(row[text_col], None, normalize_label(
                                      label_names[row[cols.label]] if label_names
                                      else str(row[cols.label])), f"hub:{hub_id}/{name}", i + 1,
                                  {"text": row[text_col]})
                      for i, row in enumerate(part)]
    return out
