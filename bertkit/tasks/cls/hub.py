"""A registered sentence-classification set from the Hugging Face hub (``datasets``), when the
set is not under ``$BERTKIT_DATA`` and the hub can be reached. Moved out of
:mod:`bertkit.tasks.cls.data`."""

from __future__ import annotations

from bertkit.data.hub import hub_splits
from bertkit.data.text import normalize_label
from bertkit.tasks.cls.examples import Columns, TextExample


def load_hub(hub_id: str, splits: tuple[str, ...], cols: Columns) -> dict | None:
    """Examples of a registered set from the Hugging Face hub (``datasets``), or None offline.

    The text is the first of ``cols.text``, ``string``, ``sentence``, ``text`` the set has;
    a ``ClassLabel`` label is turned into its name.
    """
    parts = hub_splits(hub_id, splits)
    if parts is None:
        return None
    out = {}
    for split, (name, part) in parts.items():
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
