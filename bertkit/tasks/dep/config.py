"""``finetune dep`` settings (light: no model code, so the command line can read the choices)."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.settings.options import (MAX_EVAL_SAMPLES, DEVICE, METRICS_OUTPUT, PRECISION, PREDICT_OUTPUT, SAVED_MODEL,
                             SKIP_BAD_LINES, SPLIT, STREAM_OPTIONS, Commands, Option, batch_size,
                             option)
from bertkit.tasks.finetune_config import (FinetuneConfig, data_option, eval_batch_option,
                                           evaluate_data_option, input_option, max_eval_option,
                                           max_train_option, model_option, predictions_option)

WORD_REPRS = ("first", "mean")
DECODER_NAMES = ("mst", "eisner")  # the keys of bertkit.tasks.dep.model.DECODERS (a test checks)

_DECODER = Option("mst or eisner. \\[default: as trained]", ("--decoder",), name="decoder", type=str,
                  choices=DECODER_NAMES)
COMMANDS = Commands(
    finetune="""Fine-tune a biaffine dependency parser (Dozat & Manning 2017), keep the best dev epoch
    (LAS without punctuation), score test.

    Writes a run directory: config.yaml, metrics.jsonl, results.json, test_predictions.conllu and
    model/ (encoder + tokenizer loadable with AutoModel/AutoTokenizer, parser.safetensors,
    bertkit.json with the relation labels).
    """,
    evaluate="""Score a saved dependency parser on a labelled split: UAS/LAS without and with punctuation,
    per relation, complete match.""",
    predict="""Parse new text with a saved dependency parser; writes CoNLL-U with HEAD and DEPREL filled
    in (every sentence a well-formed tree) and every other column as it came.""",
    evaluate_options=(
        SAVED_MODEL,
        evaluate_data_option("Registered set ({sets}; under $BERTKIT_DATA/dep/) or a directory "
                             "with .conllu split files."),
        Option("train, dev or test (genia: dev is the held-out tenth of dev.conllu).", ("--split",),
               name="split", type=str, choices=SPLIT.choices, default="test"),
        MAX_EVAL_SAMPLES, _DECODER, METRICS_OUTPUT,
        predictions_option("Also write the parses as CoNLL-U here."),
        Option("Leave out gold sentences that are malformed or not trees, counted in the metrics, "
               "instead of stopping.", ("--skip-bad-sentences",), name="skip_bad_sentences",
               type=bool, default=False),
        DEVICE, PRECISION, batch_size("Sentences", 64)),
    predict_options=(
        SAVED_MODEL,
        input_option("CoNLL-U file (HEAD/DEPREL may be _) or plain text, one sentence a line."),
        PREDICT_OUTPUT,
        Option("auto, conllu or text.", ("--input-format",), name="input_format", type=str,
               choices=("auto", "conllu", "text"), default="auto"),
        _DECODER, DEVICE, PRECISION, batch_size("Sentences", 64), SKIP_BAD_LINES,
        *STREAM_OPTIONS),
)


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
    data: str = data_option("genia", "Registered set ({sets}; under $BERTKIT_DATA as "
                            "dep/genia/dev.conllu and test.conllu: trains on dev less every 10th "
                            "sentence, held out for model selection, reports on test) or a "
                            "directory with train/dev/test .conllu files.")
    model: str | None = model_option()
    word_repr: str = option("first", choices=WORD_REPRS, help="Word vector: first (first subword) "
                            "or mean (mean of subwords).")
    scalar_mix: bool = option(False, flags=("--scalar-mix/--no-scalar-mix",), help="Learned "
                              "scalar mix of all encoder layers.")
    decoder: str = option("mst", choices=DECODER_NAMES, help="mst (Chu-Liu/Edmonds, one root) or "
                          "eisner (projective).")
    arc_mlp: int = option(500, min=1, help="Arc MLP size.")
    rel_mlp: int = option(100, min=1, help="Label MLP size.")
    mlp_dropout: float = option(0.33, min=0, help="Dropout after the MLPs.")
    head_lr: float | None = option(1e-3, help="Peak learning rate of the parser head (fresh "
                                   "weights; SuPar: 20x the encoder's).")
    max_length: int = option(512, min=8, help="Subword pieces per window incl. [CLS]/[SEP]; longer "
                             "input is windowed, never truncated.")
    eval_batch_size: int = eval_batch_option(64, "Sentences")
    max_train_samples: int | None = max_train_option("sentences")
    max_eval_samples: int | None = max_eval_option("sentences")
    skip_bad_sentences: bool = option(False, flags=("--skip-bad-sentences",), help="Leave out gold "
                                      "sentences that are malformed or not trees (one root, all "
                                      "words reachable), counted in results.json, instead of "
                                      "stopping.")

    commands = COMMANDS

    def task_checks(self) -> tuple:
        return (("arc_mlp", self.arc_mlp >= 1, "an integer >= 1"),
                ("rel_mlp", self.rel_mlp >= 1, "an integer >= 1"),
                ("mlp_dropout", 0 <= self.mlp_dropout < 1, "a number in [0, 1)"),
                ("head_lr", self.head_lr is None or self.head_lr > 0, "a number > 0"))
