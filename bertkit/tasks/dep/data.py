"""Dependency data: resolve ``--data`` (a directory or a registered name under BERTKIT_DATA) to
CoNLL-U sentences per split.

A set without a train file (the shared GENIA release: ``dev.conllu`` and ``test.conllu`` only) is
trained on ``dev.conllu`` less a held-out tenth, every tenth sentence (indices 9, 19, 29, ...),
which serves as the dev split for model selection; ``test.conllu`` is the reported split.

Every gold sentence must be a tree (:func:`bertkit.data.conllu.tree_problem`); with
``skip_bad_sentences`` a malformed sentence is left out and counted (``DepData.skipped``) instead
of stopping the run. Sentences are skipped before the held-out tenth is taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bertkit.data.conllu import DepSentence, read_conllu
from bertkit.data.sets import missing_message, resolve_local
from bertkit.errors import BertkitError

EXTENSIONS = (".conllu", ".conll")
LAYOUT = "dep/<name>/{train,dev,test}.conllu"
HELD_OUT_EVERY = 10


@dataclass
class DepData:
    """Sentences per split, where each came from, the note on a held-out split (or None), and
    the errors of the sentences left out with ``skip_bad_sentences`` (file order)."""

    splits: dict[str, list[DepSentence]]
    sources: dict[str, str]
    note: str | None = None
    skipped: list[BertkitError] = field(default_factory=list)

    def skipped_summary(self, shown: int = 20) -> dict:
        """``{"count": N, "first": ["FILE:LINE: message", ...]}`` for ``results.json``."""
        return {"count": len(self.skipped), "first": [str(e) for e in self.skipped[:shown]]}

    def skipped_warning(self) -> str | None:
        """A one-line console warning about skipped sentences, or None when none was skipped."""
        if not self.skipped:
            return None
        return (f"skipped {len(self.skipped)} malformed sentence(s) (--skip-bad-sentences), "
                f"first: {self.skipped[0]}")


def split_held_out(sentences: list[DepSentence], every: int = HELD_OUT_EVERY
                   ) -> tuple[list[DepSentence], list[DepSentence]]:
    """(train, held-out): every ``every``-th sentence (index ``every-1``, ``2*every-1``, ...) held out."""
    train = [s for k, s in enumerate(sentences) if k % every != every - 1]
    held = [s for k, s in enumerate(sentences) if k % every == every - 1]
    return train, held


def load_dep_data(data: str, splits: tuple[str, ...] = ("train", "dev", "test"),
                  skip_bad_sentences: bool = False, held_out: bool = True) -> DepData:
    """Load ``splits`` of ``data`` (see module docstring for sets without a train file).

    Args:
        skip_bad_sentences: leave out (and record in ``DepData.skipped``) malformed sentences and
            gold heads that are not a tree, instead of raising on the first.
        held_out: derive train/dev from ``dev`` when there is no train file (as above); False
            reads ``dev`` whole (the fine-tuning driver then splits it, ``--split-from-dev``).

    Raises:
        BertkitError: unknown name, a set not under BERTKIT_DATA, missing split, malformed file
            or sentence (FILE:LINE and sent_id), a file without a good sentence.
    """
    skipped: list[BertkitError] | None = [] if skip_bad_sentences else None
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
    if not held_out:
        note = None
    if note is not None and ("train" in splits or "dev" in splits):
        train, held = split_held_out(read_conllu(files["dev"], skipped=skipped))
        src = str(files["dev"])
        if "train" in splits:
            out["train"], sources["train"] = train, f"{src} (less every {HELD_OUT_EVERY}th sentence)"
        if "dev" in splits:
            out["dev"], sources["dev"] = held, f"{src} (every {HELD_OUT_EVERY}th sentence)"
    for split in splits:
        if split not in out:
            out[split] = read_conllu(files[split], skipped=skipped)
            sources[split] = str(files[split])
    return DepData({s: out[s] for s in splits}, sources, note, skipped or [])


def relations(sentences: list[DepSentence]) -> list[str]:
    """The sorted dependency relations occurring in ``sentences``."""
    return sorted({r for s in sentences for r in s.rels})


def unseen_relations(known, other: list[DepSentence]) -> dict[str, tuple[str, int]]:
    """Relations (DEPREL) of ``other`` not in ``known`` (labels), each with (file, line) of its
    first use; unlabelled sentences (``rels`` None) are skipped."""
    from bertkit.tasks.common import first_unseen

    return first_unseen(known, ((rel, s.file, s.line_of(k)) for s in other
                                for k, rel in enumerate(s.rels or ())))
