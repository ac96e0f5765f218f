"""The separator of multi-label data written as one delimited string a label (``"a;b"``), for
``--multi-label`` without ``--label-sep`` (issue 45, kind 13).

A warning alone still trains every combination as a class of its own; when the user asked for
multi-label and the labels share one delimiter, the data is read split on it (and said so).
"""

from __future__ import annotations

from bertkit.tasks.cls.examples import Columns, TextExample
from bertkit.tasks.cls.labels import SEPARATORS, joined_labels, label_set  # noqa: F401


def shared_delimiter(examples: list[TextExample], cols: Columns) -> tuple[str, list[str]] | None:
    """With ``--multi-label`` and no ``--label-sep``: the one separator (``;``, ``|`` or ``,``)
    that the delimited-looking labels share, and those labels; None when there are none, when
    they use more than one separator (ambiguous: the warning of ``delimited_labels`` asks for
    ``--label-sep``), or when labels already came as lists."""
    if not cols.multi_label or cols.label_sep:
        return None
    found = {sep: joined for sep in SEPARATORS if (joined := joined_labels(examples, sep))}
    if len(found) != 1:
        return None
    sep, joined = found.popitem()
    return sep, joined
