"""Dependency data: resolve ``--data`` (a directory or a registered name under BERTKIT_DATA) to
CoNLL-U sentences per split.

A set without a train file (the shared GENIA release: ``dev.conllu`` and ``test.conllu`` only) is
trained on ``dev.conllu`` less a held-out tenth, every tenth sentence (indices 9, 19, 29, ...),
which serves as the dev split for model selection; ``test.conllu`` is the reported split.
"""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.data.conllu import DepSentence, read_conllu
from bertkit.data.sets import missing_message, resolve_local
from bertkit.errors import BertkitError

EXTENSIONS = (".conllu", ".conll")
LAYOUT = "dep/<name>/{train,dev,test}.conllu"
HELD_OUT_EVERY = 10


@dataclass
class DepData:
    """Sentences per split, where each came from, and the note on a held-out split (or None)."""

    splits: dict[str, list[DepSentence]]
    sources: dict[str, str]
    note: str | None = None


def split_held_out(sentences: list[DepSentence], every: int = HELD_OUT_EVERY
                   ) -> tuple[list[DepSentence], list[DepSentence]]:
    """(train, held-out): every ``every``-th sentence (index ``every-1``, ``2*every-1``, ...) held out."""
    train = [s for k, s in enumerate(sentences) if k % every != every - 1]
    held = [s for k, s in enumerate(sentences) if k % every == every - 1]
    return train, held


def load_dep_data(data: str, splits: tuple[str, ...] = ("train", "dev", "test")) -> DepData:
    """Load ``splits`` of ``data`` (see module docstring for sets without a train file).

    Raises:
        BertkitError: unknown name, a set not under BERTKIT_DATA, missing split, malformed file.
    """
    files = resolve_local(data, "dep", EXTENSIONS, ("dev", "test"))
    if files is None:
        raise BertkitError(missing_message("dep", data, LAYOUT))
    try:
        files.update(resolve_local(data, "dep", EXTENSIONS, ("train",)))
        note = None
    except BertkitError:
        note = (f"no train split in {data}: training on {files['dev'].name} less every "
                f"{HELD_OUT_EVERY}th sentence, which is held out for model selection (dev); "
                f"reporting on {files['test'].name}")
    out, sources = {}, {}
    if note is not None and ("train" in splits or "dev" in splits):
        train, held = split_held_out(read_conllu(files["dev"]))
        src = str(files["dev"])
        if "train" in splits:
            out["train"], sources["train"] = train, f"{src} (less every {HELD_OUT_EVERY}th sentence)"
        if "dev" in splits:
            out["dev"], sources["dev"] = held, f"{src} (every {HELD_OUT_EVERY}th sentence)"
    for split in splits:
        if split not in out:
            out[split], sources[split] = read_conllu(files[split]), str(files[split])
    return DepData({s: out[s] for s in splits}, sources, note)


def relations(sentences: list[DepSentence]) -> list[str]:
    """The sorted dependency relations occurring in ``sentences``."""
    return sorted({r for s in sentences for r in s.rels})
