"""Which pretraining corpus an encoder saw, and the warning when it holds the test sentences.

An encoder pretrained (``bertkit pretrain``/``adapt``) on ``$BERTKIT_DATA/corpus/train.txt`` has
seen, unlabelled, nearly all of BC2GM's test sentences (4,864 of 4,939; the data README counts
them per set, :data:`bertkit.data.published.CONTAMINATION`). Its scores on such a set are not
comparable with a clean encoder's (the README: filter the corpus against the test set, or leave
the set out of claims), so a fine-tuning run says so with the count.

Provenance: an encoder folder bertkit writes carries its whole lineage, corpora included, in its
``bertkit.json`` (:mod:`bertkit.data.lineage`); older records are read through ``corpus`` and
``base_model`` (and their run directory's ``results.json``). A fine-tuned model's
``base_model`` is followed too, so an encoder's whole chain (DAPT on DAPT, a vocabulary
extension between, ...) is checked.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.data.sets import CORPORA, data_root, entry


def pretraining_corpora(model: str | None) -> list[str]:
    """The corpora the encoder at ``model`` (a directory) and every model it was made from
    were pretrained on, as its lineage records them (:mod:`bertkit.data.lineage`: carried in its own
    ``bertkit.json``, or an older record's ``base_model`` followed): registered names
    (``scientific``) and files; [] for a hub id or an encoder without a record."""
    from bertkit.data.lineage import lineage_corpora, model_lineage

    return lineage_corpora(model_lineage(model))


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
            if name in files or any(_same_file(f, root / folder / "train.txt") for f in files)]


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
