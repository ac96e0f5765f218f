"""RE data: resolve ``--data`` (a directory or a registered name under BERTKIT_DATA) to examples."""

from __future__ import annotations

from dataclasses import dataclass, field

from bertkit.data.relations import BadLine, RelationExample, read_relations
from bertkit.data.sets import not_available, resolve_local

EXTENSIONS = (".jsonl", ".json")
LAYOUT = "re/<name>/{train,dev,test}.jsonl"


@dataclass
class REData:
    """Examples per split, where they came from, and the bad lines skipped per split."""

    splits: dict[str, list[RelationExample]]
    sources: dict[str, str]
    bad_lines: dict[str, list[BadLine]] = field(default_factory=dict)


def load_re_data(data: str, splits: tuple[str, ...] = ("train", "dev", "test"),
                 skip_bad_lines: bool = False) -> REData:
    """Load ``splits`` of ``data``: a directory with ``train/dev/test.jsonl`` or a registered name.

    Every split is read before anything else happens, so a bad line stops the run before training.

    Raises:
        BertkitError: unknown name, missing split file, a bad line (without ``skip_bad_lines``),
            or a registered set that is not under BERTKIT_DATA (no hub loader for RE sets).
    """
    files = resolve_local(data, "re", EXTENSIONS, splits)
    if files is None:
        raise not_available("re", data, LAYOUT)
    out, sources, bad = {}, {}, {}
    for split, path in files.items():
        read = read_relations(path, labelled=True, skip_bad_lines=skip_bad_lines)
        out[split], sources[split], bad[split] = read.examples, str(path), read.bad_lines
    return REData(out, sources, bad)


def entity_types(examples: list[RelationExample]) -> list[str]:
    """Sorted entity types given in the examples (span/TACRED forms with types)."""
    return sorted({t for ex in examples for t in (ex.e1.type, ex.e2.type) if t})


def unseen_labels(known: set[str] | list[RelationExample],
                  other: list[RelationExample]) -> dict[str, tuple[str, int]]:
    """Labels of ``other`` that are not ``known`` (a set of labels, or the examples whose labels
    are known, e.g. train), each with (file, line) of its first use; unlabelled examples skipped."""
    from bertkit.tasks.common import first_unseen

    known = known if isinstance(known, set) else {ex.label for ex in known}
    return first_unseen(known, ((ex.label, ex.file, ex.line) for ex in other
                                if ex.label is not None))
