"""``finetune cls`` settings (:class:`CLSConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.tasks.common import CLASS_WEIGHTS
from bertkit.tasks.finetune_config import FinetuneConfig

LONG_TEXT = ("head-tail", "windows")
QUOTING = ("csv", "none")  # CSV/TSV quotes: csv rules (quoted fields), or plain characters


@dataclass
class CLSConfig(FinetuneConfig):
    """``finetune cls`` settings: the training-loop fields plus these.

    Attributes:
        model: encoder directory or hub id (None: the packaged MiniLM encoder).
        data: registered set (``scicite``, ``acl-arc``, ``paper-field``) or a directory with
            train/dev/test ``.jsonl``/``.json`` (JSON lines), ``.csv`` or ``.tsv`` (header row).
        text_column / text_pair_column / label_column: field names; the pair field is optional
            (sentence pairs when present), ``label`` may be a list with ``multi_label``.
        multi_label: each example has a list of labels: sigmoid outputs, binary cross-entropy,
            and one decision threshold per label chosen on dev (saved with the model).
        label_sep: with ``multi_label``, a string label is a list joined by this separator
            (``"a;b"`` with ``;``); None: a string label is one label (labels that look
            delimited are warned about).
        quoting: CSV/TSV quote handling: ``csv`` (quoted fields may hold delimiters and line
            breaks) or ``none`` (a ``"`` is a plain character: unquoted TSV exports whose
            texts hold quotes).
        long_text: an input over ``max_length`` pieces is never cut silently: ``head-tail`` keeps
            its first quarter and last three quarters of the budget (Sun et al., 2019, "How to
            fine-tune BERT for text classification?", §5.3: head+tail beat head-only and
            tail-only) and the run reports how many were shortened; ``windows`` splits it into
            windows overlapping by half a window and averages their logits.
        class_weights: ``balanced`` weighs each label's loss by ``N / (C * count)`` (scikit-learn's
            ``balanced``), for imbalanced sets such as ACL-ARC; ``none``: plain cross-entropy.
        max_length: pieces per input, ``[CLS]``/``[SEP]`` included.
        length_group: training batches sorted by length together (Hugging Face's
            ``group_by_length`` mega-batches, :func:`bertkit.batching.length_grouped_batches`);
            1 gives random batches padded to their own longest text.
        skip_bad_lines: skip (and count) unreadable lines instead of stopping before training.
        eval_batch_size: inputs per forward pass when evaluating and predicting.
        max_train_samples / max_eval_samples: use only the first N examples (quick runs).
    """

    model: str | None = None
    data: str = "scicite"
    text_column: str = "text"
    text_pair_column: str = "text_pair"
    label_column: str = "label"
    multi_label: bool = False
    label_sep: str | None = None
    quoting: str = "csv"
    long_text: str = "head-tail"
    class_weights: str = "none"
    max_length: int = 512
    skip_bad_lines: bool = False
    eval_batch_size: int = 64
    length_group: int = 50
    max_train_samples: int | None = None
    max_eval_samples: int | None = None

    def task_checks(self) -> tuple:
        return (("long_text", self.long_text in LONG_TEXT, " or ".join(LONG_TEXT)),
                ("class_weights", self.class_weights in CLASS_WEIGHTS, " or ".join(CLASS_WEIGHTS)),
                ("length_group", self.length_group >= 1, "an integer >= 1 (1: random batches)"),
                ("text_column", bool(self.text_column.strip()), "a field name"),
                ("label_column", bool(self.label_column.strip()), "a field name"),
                ("quoting", self.quoting in QUOTING, " or ".join(QUOTING)),
                ("label_sep", self.label_sep is None or (bool(self.label_sep) and self.multi_label),
                 "a non-empty separator, with --multi-label (labels are lists)"))
