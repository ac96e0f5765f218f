"""``finetune re`` settings."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.heads.relation import POOLINGS
from bertkit.tasks.common import CLASS_WEIGHTS
from bertkit.tasks.finetune_config import FinetuneConfig


@dataclass
class REConfig(FinetuneConfig):
    """``finetune re`` settings: the training-loop fields plus these.

    Attributes:
        model: BERT-architecture encoder directory or hub id (None: the packaged MiniLM encoder).
        data: registered set name (``chemprot``) or a directory with train/dev/test ``.jsonl``.
        pooling: ``cls`` (SciBERT's setting) or ``entity-start`` (states at ``[E1]`` and ``[E2]``
            concatenated, Baldini Soares et al., 2019). ``cls`` is the default because it scored
            higher on ChemProt dev in a short run with the packaged MiniLM (54.17 vs 40.67
            micro-F1; 1,500 training pairs, 1 epoch), confirmed at the benchmark's settings (dev
            59.33 vs 50.00; 500 pairs, 2 epochs; see README).
        typed_markers: one marker pair per entity type (``[E1:CHEMICAL]``) when the data gives
            types (span/TACRED forms); untyped markers otherwise.
        negative_label: the "no relation" label left out of micro/macro-F1: ``auto`` (one of
            no_relation, false, none, NA, other, negative if present), a label, or ``-`` for none.
        class_weights: ``balanced`` weighs each label's loss by ``N / (C * count)`` (scikit-learn's
            ``balanced``, as ``finetune cls``; the negative label is weighted like any other) for
            a classifier that collapses to the majority label; ``none``: plain cross-entropy.
        max_length: pieces per input incl. markers and ``[CLS]``/``[SEP]``; longer inputs are cut
            around the two entities (both always kept).
        skip_bad_lines: skip (and count) unreadable lines instead of stopping before training.
        eval_batch_size: pairs per forward pass when evaluating and predicting.
        max_train_samples / max_eval_samples: use only the first N pairs (quick runs).
    """

    model: str | None = None
    data: str = "chemprot"
    pooling: str = "cls"
    typed_markers: bool = False
    negative_label: str = "auto"
    class_weights: str = "none"
    max_length: int = 512
    skip_bad_lines: bool = False
    eval_batch_size: int = 64
    max_train_samples: int | None = None
    max_eval_samples: int | None = None

    def task_checks(self) -> tuple:
        return (("pooling", self.pooling in POOLINGS, " or ".join(POOLINGS)),
                ("negative_label", bool(self.negative_label.strip()), "auto, a label or -"),
                ("class_weights", self.class_weights in CLASS_WEIGHTS, " or ".join(CLASS_WEIGHTS)))
