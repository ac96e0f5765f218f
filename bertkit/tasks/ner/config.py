"""``finetune ner`` settings (:class:`NERConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.tasks.finetune_config import FinetuneConfig

METRICS = {"span": "f1", "token-macro": "token_macro_f1"}
"""``--metric`` choices and the dev metric each selects the best epoch by."""


@dataclass
class NERConfig(FinetuneConfig):
    """``finetune ner`` settings: the training-loop fields plus these.

    Attributes:
        model: encoder directory or hub id (None: the packaged MiniLM encoder).
        data: registered set name or a directory with train/dev/test files.
        max_length: pieces per window, ``[CLS]``/``[SEP]`` included; longer sentences are windowed.
        crf: add a linear-chain CRF (decoding is constrained to valid IOB2 either way).
        label_all_subwords: train continuation pieces too (``B-X`` pieces after the first as ``I-X``).
        eval_batch_size: windows per forward pass when evaluating and predicting.
        pack: run training forward passes on packed rows (several sentences a row, block-diagonal
            attention, see :mod:`bertkit.packing`): random batches without padding work.
        pack_length: minimum tokens per packed row (a row is never shorter than the batch's
            longest window).
        length_group: training batches sorted by length together, as Hugging Face's
            ``group_by_length``; 1 gives random batches, as the stock recipe. Default (None): 1
            with packing, 50 without (length-sorted batches are nearly free of padding but
            homogeneous, which cost about 1 F1 point on BC5CDR; see README Results).
        max_train_samples / max_eval_samples: use only the first N sentences (quick runs).
        metric: the dev metric that selects the best epoch: ``span`` (entity F1, seqeval strict
            IOB2) or ``token-macro`` (token-level macro-F1 over the entity types, prefix
            dropped: the PICO figure of EBM-NLP, Nye et al. 2018, reported by SciBERT). Both
            are always reported.
    """

    model: str | None = None
    data: str = "bc5cdr"
    max_length: int = 512
    crf: bool = False
    label_all_subwords: bool = False
    eval_batch_size: int = 32
    pack: bool = True
    pack_length: int = 64
    length_group: int | None = None
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    metric: str = "span"

    def task_checks(self) -> tuple:
        return (("metric", self.metric in METRICS, " or ".join(METRICS)),
                ("pack_length", self.pack_length >= 8, "an integer >= 8"),
                ("length_group", (self.length_group or 1) >= 1,
                 "an integer >= 1 (1: random batches)"))
