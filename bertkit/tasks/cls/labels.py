"""Labels of sentence-classification data: the label set, labels a model cannot predict, and
labels that look like delimited lists (``"a;b"``) read as one label each.

Moved out of :mod:`bertkit.tasks.cls.data` (which re-exports them); the delimiter rule is one
function, :func:`joined_labels`, used by the warning here and by
:func:`bertkit.tasks.cls.delimiters.shared_delimiter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.data.text import looks_alike
from bertkit.errors import BertkitError
from bertkit.tasks.cls.examples import Columns, TextExample

if TYPE_CHECKING:
    from bertkit.tasks.base import TaskData


def label_set(examples: list[TextExample]) -> list[str]:
    """Sorted labels used by ``examples`` (multi-label lists flattened)."""
    found: set[str] = set()
    for ex in examples:
        if isinstance(ex.label, list):
            found.update(ex.label)
        elif ex.label is not None:
            found.add(ex.label)
    return sorted(found)


def check_known_labels(examples: list[TextExample], known: list[str], split: str,
                       known_from: str = "the training labels") -> None:
    """Refuse a label the model cannot predict (absent from the training labels).

    Args:
        known: the labels the model has.
        known_from: where ``known`` came from, for the message (``"the model's labels"``, or
            :func:`training_labels_source`'s words).

    Raises:
        BertkitError: naming the first such example's file and line, the label, where the known
            labels came from, and the known labels.
    """
    allowed = set(known)
    for ex in examples:
        labels = ex.label if isinstance(ex.label, list) else [ex.label]
        for lab in labels:
            if lab is not None and lab not in allowed:
                alike = [k for k in known if looks_alike(k) == looks_alike(lab)]
                hint = (f" ({alike[0]!r} looks the same but differs in case or invisible "
                        f"characters)" if alike else "")
                raise BertkitError(f"label {lab!r} in {split} is not among {known_from}: the "
                                   f"model could not predict it{hint}",
                                   file=ex.file, line=ex.line,
                                   expected="one of " + ", ".join(map(repr, known)))


def training_labels_source(source: str, n_read: int, n_used: int) -> str:
    """Words for where the training labels came from: ``source`` with all ``n_read`` examples,
    and, when only the first ``n_used`` are trained on, that the limit did not narrow them."""
    text = f"the labels of the training data ({source}, all {n_read} examples"
    if n_used < n_read:
        text += (f"; --max-train-samples {n_used} trains on the first {n_used} but takes the "
                 f"labels from all")
    return text + ")"


def labels_missing_from(examples: list[TextExample], labels: list[str]) -> list[str]:
    """The ``labels`` no example of ``examples`` has (e.g. beyond ``--max-train-samples``)."""
    present = set(label_set(examples))
    return [lab for lab in labels if lab not in present]


SEPARATORS = (";", "|", ",")


def joined_labels(examples: list[TextExample], sep: str) -> list[str]:
    """The labels of ``examples`` that look like lists joined by ``sep``: non-empty parts, and
    for ``,`` (common inside a label) at least one part that is a label on its own elsewhere
    (the rule of :func:`delimited_labels`).

    >>> xs = [TextExample("t", label="a;b"), TextExample("u", label="c")]
    >>> joined_labels(xs, ";"), joined_labels(xs, ",")
    (['a;b'], [])
    """
    found = label_set(examples)
    alone = set(found)
    return [lab for lab in found if sep in lab
            and all(part.strip() for part in lab.split(sep))
            and (sep != "," or any(part.strip() in alone for part in lab.split(sep)))]


def delimited_labels(examples: list[TextExample], cols: Columns) -> str | None:
    """A warning when string labels look like delimited lists (``"a;b"``) read as one label each,
    so that every combination would become a class of its own; None when they do not.

    A label looks delimited when it holds ``;`` or ``|`` between non-empty parts, or ``,``
    between parts that are labels on their own elsewhere. No warning with ``cols.label_sep``.
    """
    if cols.label_sep:
        return None
    for sep in SEPARATORS:
        joined = joined_labels(examples, sep)
        if not joined:
            continue
        first = next(ex for ex in examples
                     if set(joined) & set(ex.label if isinstance(ex.label, list) else [ex.label]))
        how = "" if cols.multi_label else "--multi-label "
        shown = ", ".join(repr(j) for j in joined[:3]) + (", ..." if len(joined) > 3 else "")
        return (f"{len(joined)} label(s) look like {sep!r}-delimited lists ({shown}; first at "
                f"{first.file}:{first.line}): each is read as one label, so every combination "
                f"becomes a class of its own; for multi-label data pass {how}--label-sep '{sep}'")
    return None


def checked_label_set(data: TaskData, multi_label: bool) -> list[str]:
    """The label set of the whole training data (``data.label_examples``: before
    ``--max-train-samples``, so a sample limit never changes it), checked.

    Raises:
        BertkitError: fewer than two training labels (one, multi-label), or a dev/test label
            absent from the whole training data (file and line named).
    """
    full = data.label_examples
    labels = label_set(full)
    if len(labels) < (1 if multi_label else 2):
        raise BertkitError(f"the training data has {len(labels)} label(s)",
                           file=data.sources["train"], expected="at least two labels")
    known_from = training_labels_source(data.sources["train"], len(full),
                                        len(data.splits["train"]))
    for split in ("dev", "test"):
        check_known_labels(data.splits[split], labels, split, known_from)
    return labels
