"""``bertkit adapt``'s settings: each field is also the command's option (:mod:`bertkit.settings.options`),
declared once here (help, flags, checks; ``--help`` shows the default written here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.settings.layers import format_value
from bertkit.errors import BertkitError
from bertkit.masking import STRATEGIES
from bertkit.settings.options import option
from bertkit.tasks.pretrain.config import PretrainConfig
from bertkit.tasks.registry import TASKS, load_attr
from bertkit.training.devices import PRECISIONS

DAPT_STEPS = 300  # adapt's default DAPT steps (of 32 x 128 tokens), as recipes/pretrain/dapt-cpu.yaml
TASK_NAMES = tuple(TASKS)
MASKINGS = tuple(STRATEGIES)
DATA_DEFAULTS = " / ".join(load_attr(e.config).data for e in TASKS.values())
"""The tasks' default data sets, as ``--data``'s help shows them."""


@dataclass
class AdaptConfig:
    """``bertkit adapt`` settings. None means "not given": the stage recipe's value, else the
    stage command's default.

    Attributes:
        task: a registered task (``ner``, ``re``, ``dep``, ``cls``, ``qa``); data: its data set
            (None: the task's default).
        model: the encoder to adapt (None: the packaged MiniLM).
        extend_vocab: add up to this many words to the vocabulary first (0: no extension);
            extend_vocab_from: the vocabulary they come from.
        corpus: DAPT text (files/directories, comma-separated); valid: held-out text for the
            pretraining stages' validation MLM loss.
        task_text: TAPT text: ``TASK:DATA`` (``ner:bc5cdr``, ``cls:scicite``), ``task`` (the
            fine-tuning data), or a file (:data:`bertkit.workflows.task_text.FORMATS`).
        pretrain_steps: DAPT optimiser steps (None: the recipe's, else 300).
        tapt_epochs: TAPT passes over the task text's packed sequences.
        masking, pretrain_lr, pretrain_batch_size, max_seq_length, head_warmup_steps: passed to
            both pretraining stages; pretrain_recipe: a ``pretrain`` recipe under them.
        epochs, lr, batch_size, max_train_samples, max_eval_samples: passed to fine-tuning
            (``max_train_samples`` also limits TAPT on the task's own data, ``task_text`` of
            ``task`` or the fine-tuning ``TASK:DATA``, to those examples);
            finetune_recipe: a ``finetune TASK`` recipe under them.
        seed: pretraining seed and the fine-tuning seed without ``seeds``; seeds: fine-tuning
            seeds, comma-separated (``1,2,3``): one fine-tuning run each, mean and spread.
        compare: also fine-tune the unadapted model (same settings and seeds) into ``baseline/``.
        device, precision, cache_dir: passed to every stage.
        output_dir: the run directory (None: ``runs/adapt-<task>-<time>``).
        overwrite: run every stage again, replacing earlier outputs.
    """

    task: str = option("ner", flags=("--task", "-t"), choices=TASK_NAMES, help="Fine-tuning "
                       "task: " + ", ".join(TASK_NAMES[:-1]) + f" or {TASK_NAMES[-1]}.")
    data: str | None = option(None, flags=("--data", "-d"), shown=DATA_DEFAULTS, help="The "
                              "task's data set (registered name or directory).")
    model: str | None = option(None, flags=("--model", "-m"), shown="the packaged MiniLM-L6-H384 "
                               "encoder", help="Encoder directory or hub id.")
    extend_vocab: int = option(0, min=0, shown="0, off", help="First add up to N words the model "
                               "splits (`vocab extend`), ranked by the adaptation text.")
    extend_vocab_from: str = option("scivocab-uncased", help="Vocabulary the new words come "
                                    "from.")
    corpus: str | None = option(None, flags=("--corpus", "-c"), repeat=True, help="DAPT: "
                                "continue the MLM on this domain text (file, .gz or directory; "
                                "repeatable).")
    valid: str | None = option(None, type=Path, help="Held-out text: validation MLM loss of each "
                               "pretraining stage.")
    task_text: str | None = option(None, help="TAPT: continue the MLM on a task's training "
                                   "text: TASK:DATA (ner:bc5cdr, re:chemprot, dep:genia, "
                                   "cls:scicite), 'task' (the fine-tuning data) or a file: "
                                   "CoNLL, CoNLL-U, relation or classification JSONL, CSV/TSV "
                                   "with a text column, ID<TAB>TEXT, or plain text. After DAPT "
                                   "when both are given.")
    pretrain_steps: int | None = option(None, min=1, shown=f"the pretrain recipe's, else "
                                        f"{DAPT_STEPS}", help="DAPT optimiser steps.")
    tapt_epochs: int = option(10, min=1, help="TAPT passes over the task text.")
    masking: str | None = option(None, choices=MASKINGS, shown=PretrainConfig.masking,
                                 help="Pretraining masking: token, wwm or span (+ SBO).")
    pretrain_lr: float | None = option(None, shown=format_value(PretrainConfig.lr),
                                       help="Pretraining peak learning rate.")
    pretrain_batch_size: int | None = option(None, min=1, shown=str(PretrainConfig.batch_size),
                                             help="Pretraining sequences per step.")
    max_seq_length: int | None = option(None, min=8, shown=str(PretrainConfig.max_seq_length),
                                        help="Pretraining tokens per packed sequence.")
    head_warmup_steps: int | None = option(None, min=0, help="Train a new MLM head alone for N "
                                           "steps first (where this bertkit's pretraining has "
                                           "it).")
    pretrain_recipe: str | None = option(None, type=Path, help="A pretrain recipe (file or name) "
                                         "under the pretraining options above.")
    epochs: int | None = option(None, min=1, shown="the task's", help="Fine-tuning epochs.")
    lr: float | None = option(None, shown="the task's", help="Fine-tuning peak learning rate.")
    batch_size: int | None = option(None, flags=("--batch-size", "-b"), min=1, shown="the task's",
                                    help="Fine-tuning batch size.")
    max_train_samples: int | None = option(None, min=1, help="Fine-tune on the first N training "
                                           "examples only (TAPT on the task's own data reads "
                                           "the same N).")
    max_eval_samples: int | None = option(None, min=1, help="Score the first N dev and test "
                                          "examples only.")
    finetune_recipe: str | None = option(None, type=Path, help="A finetune recipe (file or name, "
                                         "e.g. bc5cdr-ner-minilm) under the fine-tuning options "
                                         "above.")
    seed: int = option(42, help="Pretraining seed, and the fine-tuning seed without --seeds.")
    seeds: str | None = option(None, help="Fine-tuning seeds, e.g. 1,2,3: one run each, mean and "
                               "standard deviation.")
    compare: bool = option(False, flags=("--compare/--no-compare",), help="Also fine-tune the "
                           "unadapted model with the same settings and print both.")
    device: str | None = option(None, shown="auto", help="auto, cpu, cuda, cuda:N or mps (every "
                                "stage).")
    precision: str | None = option(None, choices=PRECISIONS, shown="auto", help="auto, fp32, "
                                   "bf16 or fp16 (every stage).")
    cache_dir: str | None = option(None, type=Path, shown="$BERTKIT_CACHE or ~/.cache/bertkit",
                                   help="Tokenised-corpus cache.")
    output_dir: str | None = option(None, flags=("--output-dir", "-o"), type=Path,
                                    shown="runs/adapt-<task>-<time>", help="Run directory: "
                                    "vocab/, pretrain/, finetune/, baseline/, summary.json. Run "
                                    "the same command again to continue: finished stages with "
                                    "the same settings are skipped, a stopped one continues from "
                                    "its last checkpoint, one recorded with other settings is "
                                    "refused (naming them).")
    overwrite: bool = option(False, flags=("--overwrite",), help="Run every stage again, "
                             "replacing the earlier outputs.")

    def seed_list(self) -> list[int]:
        """The fine-tuning seeds: ``seeds`` parsed, else ``[seed]``.

        Raises:
            BertkitError: ``seeds`` is not a comma-separated list of distinct integers.
        """
        from bertkit.tasks.driver import parse_seeds

        return parse_seeds(self.seeds) or [self.seed]

    def check_ranges(self) -> None:
        """Check the settings that need no file.

        Raises:
            BertkitError: naming the first option at fault and what it must be.
        """
        from bertkit.tasks.registry import task_names

        tasks = task_names()
        checks = (
            ("task", self.task in tasks, ", ".join(tasks[:-1]) + " or " + tasks[-1]),
            ("extend_vocab", self.extend_vocab >= 0, "an integer >= 0 (0: no extension)"),
            ("pretrain_steps", (self.pretrain_steps or 1) >= 1, "an integer >= 1"),
            ("tapt_epochs", self.tapt_epochs >= 1, "an integer >= 1"),
            ("head_warmup_steps", (self.head_warmup_steps or 0) >= 0, "an integer >= 0"))
        for name, ok, expected in checks:
            if not ok:
                raise BertkitError(f"--{name.replace('_', '-')} is {getattr(self, name)!r}",
                                   expected=expected)
        self.seed_list()

    def validate(self) -> None:
        """:meth:`check_ranges`, plus: something to adapt.

        Raises:
            BertkitError: a setting out of range, or none of --corpus, --task-text, --extend-vocab.
        """
        self.check_ranges()
        if not (self.corpus or self.task_text or self.extend_vocab):
            raise BertkitError("nothing to adapt", expected="--corpus (DAPT), --task-text (TAPT) "
                                                            "and/or --extend-vocab N")


