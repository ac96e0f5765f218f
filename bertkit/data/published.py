"""Published test scores and corpus-contamination counts of the registered data sets, as data.

The table the suite command (``bertkit bench``) and the README's results read: one
:class:`Published` row per (set, model, metric), and one :class:`Contamination` record per set
whose dev/test sentences were counted against a pretraining corpus. Every figure is copied from
``$BERTKIT_DATA/README.md`` (which names the paper and table); values are in points (0-100), and
``metric`` is the key of the task's ``results.json`` ``test`` record the value compares with
(``f1`` for NER entity F1, ``micro_f1``/``macro_f1`` for RE, ``pearson`` for similarity,
``accuracy``, ``hoc_f1`` for BLURB's HoC metric).

``comparable`` is False where our split of the set differs from the paper's test set (HoC: a split
of our own), so a score may be shown beside the figure but never claimed against it.

Sources:
    Gu et al. (2021), "Domain-specific language model pretraining for biomedical NLP" (BLURB),
    Table 6; Beltagy et al. (2019), "SciBERT", Table 1; Gururangan et al. (2020), "Don't stop
    pretraining", Table 5.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

BLURB = "Gu et al. 2021 (BLURB), Table 6"
SCIBERT = "Beltagy et al. 2019 (SciBERT), Table 1"
DAPT = "Gururangan et al. 2020, Table 5"


@dataclass(frozen=True)
class Published:
    """One published test score.

    Attributes:
        model: the encoder as the paper names it (``PubMedBERT``, ``SciBERT``, ``BERT-base``).
        metric: the ``results.json`` ``test`` key it compares with (``f1``, ``micro_f1``, ...).
        value: the score in points (0-100).
        source: paper and table.
        comparable: False when our split's test set is not the paper's (then shown, never
            claimed against).
        note: how the paper's setting differs (training data, split), "" for none.
    """

    model: str
    metric: str
    value: float
    source: str
    comparable: bool = True
    note: str = ""


@dataclass(frozen=True)
class Contamination:
    """How many dev and test sentences of a set are also lines of a pretraining corpus.

    Counted by the data README: lower-cased, whitespace-tokenised sentences of 5 tokens or more
    (distinct sentences for pair sets) that are a line of ``corpus``'s ``train.txt``.

    Attributes:
        corpus: the registered corpus name (:data:`bertkit.data.sets.CORPORA`: ``scientific``).
        test, test_total, dev, dev_total: sentences found / sentences counted.
    """

    corpus: str
    test: int
    test_total: int
    dev: int
    dev_total: int

    def sentence(self) -> str:
        """``4,864 of 4,939 test sentences (dev 2,427 of 2,474)``."""
        return (f"{self.test:,} of {self.test_total:,} test sentences (dev {self.dev:,} of "
                f"{self.dev_total:,})")


def _rows(metric: str, source: str, comparable: bool = True, note: str = "",
          **scores: float) -> tuple[Published, ...]:
    """Rows of one metric and source: ``PubMedBERT=93.33`` (``BERTbase`` is ``BERT-base``,
    ``_plus_`` is ``+``)."""
    return tuple(Published(model.replace("_plus_", "+").replace("BERTbase", "BERT-base"), metric,
                           value, source, comparable, note) for model, value in scores.items())


FULL_TRAIN = "trained on the full official training split (larger than ours)"

PUBLISHED: dict[tuple[str, str], tuple[Published, ...]] = {
    ("ner", "bc5-chem"): _rows("f1", BLURB, PubMedBERT=93.33, BioBERT=92.85, SciBERT=92.49),
    ("ner", "bc5-disease"): _rows("f1", BLURB, PubMedBERT=85.62, BioBERT=84.70, SciBERT=84.54),
    ("ner", "bc2gm"): _rows("f1", BLURB, PubMedBERT=84.52),
    ("ner", "jnlpba"): _rows("f1", BLURB, PubMedBERT=79.10, BioBERT=78.55, SciBERT=78.68)
    + _rows("f1", SCIBERT, SciBERT=77.28, BERTbase=76.09),
    ("ner", "sciie"): _rows("f1", SCIBERT, note="span F1", SciBERT=67.57, BERTbase=65.24),
    ("re", "sciie"): _rows("macro_f1", SCIBERT, SciBERT=79.97, BERTbase=78.71)
    + _rows("macro_f1", DAPT, RoBERTa=77.3, DAPT=80.8, TAPT=79.3, DAPT_plus_TAPT=81.3),
    ("re", "ddi"): _rows("micro_f1", BLURB, note="BLURB's own train/dev split (test the same)",
                         PubMedBERT=82.36),
    ("sim", "biosses"): _rows("pearson", BLURB, PubMedBERT=92.30),
    ("cls", "hoc"): _rows("hoc_f1", BLURB, comparable=False,
                          note="BLURB's split; ours is a split by PMID of our own",
                          PubMedBERT=82.32),
    ("cls", "pubmedqa"): _rows("accuracy", BLURB, note="BLURB's train/dev may differ",
                               PubMedBERT=55.84),
    # sets registered before December 2026 (README Notes): SciBERT, SciVocab, fine-tuned
    ("ner", "bc5cdr"): _rows("f1", SCIBERT, note="leaderboard figure; the paper's table: 90.01",
                             SciBERT=88.94),
    ("re", "chemprot"): _rows("micro_f1", SCIBERT, SciBERT=83.64),
    ("cls", "scicite"): _rows("macro_f1", SCIBERT, SciBERT=84.99),
    ("cls", "acl-arc"): _rows("macro_f1", SCIBERT, SciBERT=70.98),
    ("cls", "paper-field"): _rows("macro_f1", SCIBERT, note=FULL_TRAIN, SciBERT=65.71),
    ("ner", "ebmnlp"): _rows("token_macro_f1", SCIBERT, note=FULL_TRAIN, SciBERT=71.18),
}
"""``{(task, set name): published rows}`` (module docstring)."""

CONTAMINATION: dict[tuple[str, str], Contamination] = {
    ("ner", "bc5-chem"): Contamination("scientific", 2, 4774, 0, 4554),
    ("ner", "bc5-disease"): Contamination("scientific", 2, 4774, 0, 4554),
    ("ner", "bc2gm"): Contamination("scientific", 4864, 4939, 2427, 2474),
    ("ner", "jnlpba"): Contamination("scientific", 19, 3841, 282, 1737),
    ("ner", "sciie"): Contamination("scientific", 0, 551, 0, 275),
    ("re", "sciie"): Contamination("scientific", 0, 397, 0, 187),
    ("re", "ddi"): Contamination("scientific", 0, 781, 0, 367),
    ("sim", "biosses"): Contamination("scientific", 0, 39, 0, 32),
    ("cls", "hoc"): Contamination("scientific", 8, 3461, 0, 1718),
    ("cls", "pubmedqa"): Contamination("scientific", 0, 2148, 0, 206),
}
"""``{(task, set name): counts}`` from ``$BERTKIT_DATA/README.md``."""


def published_table() -> list[dict]:
    """Every published row as a flat dict (``task``, ``data``, ``model``, ``metric``,
    ``value``, ``source``, ``comparable``, ``note``), sorted by task and set: for the suite
    command and for writing the table as JSON or CSV.

    >>> rows = published_table()
    >>> [r["value"] for r in rows if r["data"] == "biosses"]
    [92.3]
    """
    return [{"task": task, "data": name, **asdict(row)}
            for (task, name), rows in sorted(PUBLISHED.items()) for row in rows]
