"""NER data: resolve ``--data`` (directory, registered name under BERTKIT_DATA, or hub) to sentences."""

from __future__ import annotations

from dataclasses import dataclass, field

from bertkit.data.conll import Sentence, read_conll
from bertkit.data.hub import load_hub_ner
from bertkit.data.sets import entry, missing_message, resolve_local
from bertkit.errors import BertkitError

EXTENSIONS = (".tsv", ".conll", ".txt", ".iob", ".iob2", ".bio")
LAYOUT = "ner/<name>/{train,dev,test}.tsv"


@dataclass
class NERData:
    """Sentences per split (IOB2 tags), where they came from and the scheme found in each file;
    ``notes``: warnings about the files (stray ``I-`` tags in an IOB2 file, lines named)."""

    splits: dict[str, list[Sentence]]
    sources: dict[str, str]
    schemes: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def load_ner_data(data: str, splits: tuple[str, ...] = ("train", "dev", "test")) -> NERData:
    """Load ``splits`` of ``data``: a directory, or a registered name (BERTKIT_DATA, else hub).

    Raises:
        BertkitError: unknown name, missing split file, malformed file, or a registered set that
            is neither under BERTKIT_DATA nor reachable on the hub.
    """
    files = resolve_local(data, "ner", EXTENSIONS, splits)
    if files is not None:
        out, sources, schemes, notes = {}, {}, {}, []
        for split, path in files.items():
            conll = read_conll(path)
            out[split], sources[split], schemes[split] = conll.sentences, str(path), conll.scheme
            notes += [conll.stray_note()] if conll.stray else []
        return NERData(out, sources, schemes, notes)
    reg = entry("ner", data)
    loaded = load_hub_ner(reg.hub_id, splits) if reg else None
    if loaded is None:
        raise BertkitError(missing_message("ner", data, LAYOUT))
    return NERData(loaded, {s: f"hub:{reg.hub_id}" for s in splits}, {s: "IOB2" for s in splits})


def entity_types(sentences: list[Sentence]) -> set[str]:
    """Entity types occurring in IOB2 tags."""
    return {t[2:] for s in sentences for t in s.tags if t != "O"}


def unseen_labels(known: set[str] | list[Sentence],
                  other: list[Sentence]) -> dict[str, tuple[str, int]]:
    """Entity types in ``other`` that are not ``known`` (a set of types, or the sentences whose
    types are known, e.g. train), each with (file, line) of its first use."""
    from bertkit.tasks.common import first_unseen

    known = known if isinstance(known, set) else entity_types(known)
    return first_unseen(known, ((tag[2:], s.file, s.line_of(k)) for s in other
                                for k, tag in enumerate(s.tags) if tag != "O"))
