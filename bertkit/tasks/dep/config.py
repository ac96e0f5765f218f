"""``finetune dep`` settings (light: no model code, so the command line can read the choices)."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.tasks.finetune_config import FinetuneConfig

WORD_REPRS = ("first", "mean")
DECODER_NAMES = ("mst", "eisner")  # the keys of bertkit.tasks.dep.model.DECODERS (a test checks)


@dataclass
class DepConfig(FinetuneConfig):
    """``finetune dep`` settings: the training-loop fields plus these.

    Defaults for ``epochs``, ``lr`` and ``batch_size`` are those of ``benchmarks/dep_genia.py``
    (GENIA, packaged MiniLM encoder; the lr follows the NER tuning of the same encoder, where
    2e-4 beat 1e-4); the freshly initialised parser head trains at ``head_lr`` (SuPar: 20x the
    encoder's rate).

    Attributes:
        model: encoder directory or hub id (None: the packaged MiniLM encoder).
        data: registered set name or a directory with train/dev/test ``.conllu`` files.
        max_length: pieces per window, ``[CLS]``/``[SEP]`` included; longer sentences are windowed.
        word_repr: ``first`` (first subword) or ``mean`` (mean of the word's subwords).
        scalar_mix: learned scalar mix of all encoder layers instead of the last layer.
        arc_mlp / rel_mlp: MLP sizes of the arc and label scorers (Dozat & Manning: 500 / 100).
        mlp_dropout: dropout after each MLP (Dozat & Manning: 0.33).
        decoder: ``mst`` (Chu-Liu/Edmonds, single root) or ``eisner`` (projective).
        head_lr: peak learning rate of the parser head (None: ``lr``).
        eval_batch_size: sentences per forward pass when evaluating and predicting.
        max_train_samples / max_eval_samples: use only the first N sentences (quick runs).
        skip_bad_sentences: leave out and count gold sentences that are malformed or not trees
            (``skipped_sentences`` in ``results.json``) instead of stopping.
    """

    epochs: int = 6
    lr: float = 2e-4
    batch_size: int = 16
    model: str | None = None
    data: str = "genia"
    max_length: int = 512
    word_repr: str = "first"
    scalar_mix: bool = False
    arc_mlp: int = 500
    rel_mlp: int = 100
    mlp_dropout: float = 0.33
    decoder: str = "mst"
    head_lr: float | None = 1e-3
    eval_batch_size: int = 64
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    skip_bad_sentences: bool = False

    def task_checks(self) -> tuple:
        return (("word_repr", self.word_repr in WORD_REPRS, " or ".join(WORD_REPRS)),
                ("decoder", self.decoder in DECODER_NAMES, " or ".join(DECODER_NAMES)),
                ("arc_mlp", self.arc_mlp >= 1, "an integer >= 1"),
                ("rel_mlp", self.rel_mlp >= 1, "an integer >= 1"),
                ("mlp_dropout", 0 <= self.mlp_dropout < 1, "a number in [0, 1)"),
                ("head_lr", self.head_lr is None or self.head_lr > 0, "a number > 0"))
