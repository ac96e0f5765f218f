"""How a task declares its command-line surface, as plain data (no typer, no model code).

A task's settings dataclass marks each field that is a ``finetune`` option with
:func:`option` (help text, flags, choices, minimum; the ``--help`` default is the field's own
default unless ``shown`` says otherwise), and its config module gives :class:`Commands`: the help
of its three commands and the options of ``evaluate`` and ``predict`` (which are arguments of the
task's ``evaluate``/``predict`` functions, not settings). One builder in the CLI
(:mod:`bertkit.cli._tasks`) turns these into ``bertkit finetune|evaluate|predict <task>`` for
every registered task, so a new task touches no file of ``bertkit/cli``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REQUIRED = ...
"""``Option.default`` of an option the user must give (``--model`` of ``evaluate``)."""

SETS = "{sets}"
"""Placeholder in a ``--data`` help text for the task's registered sets (``bc5cdr, ncbi``)."""


@dataclass(frozen=True)
class Option:
    """One command-line option.

    Attributes:
        help: the ``--help`` text (``{sets}``: the task's registered data sets).
        flags: the option's names (``("--batch-size", "-b")``, ``("--crf/--no-crf",)``); empty:
            ``--`` and the field name with dashes.
        choices: the values accepted (checked by the command line, exit 2), or None.
        min: the smallest value accepted, or None; max: the largest, or None.
        repeat: the option may be given several times (``--corpus A --corpus B``); the
            setting holds the values joined by commas.
        shown: the ``[default: ...]`` text of a ``finetune`` option ("" for none); None: the
            field's default as the shared training options show theirs.
        name: the argument's name (``evaluate``/``predict`` options; a field's is its own).
        type: the value type (``evaluate``/``predict`` options; a field's comes from its
            annotation).
        default: the default of an ``evaluate``/``predict`` option (:data:`REQUIRED`: none).
        positional: an argument (``vocab compare A B``), not an option; ``flags`` unused.
        case_sensitive: False: ``choices`` are matched in any case (``--normalize NFKC``).
    """

    help: str
    flags: tuple[str, ...] = ()
    choices: tuple[str, ...] | None = None
    min: float | None = None
    max: float | None = None
    repeat: bool = False
    shown: str | None = None
    name: str | None = None
    type: Any = None
    default: Any = None
    positional: bool = False
    case_sensitive: bool = True

    def named(self, name: str) -> "Option":
        """This option with ``name`` set (and its flags, when none were given)."""
        flags = self.flags or (() if self.positional else ("--" + name.replace("_", "-"),))
        return dataclasses.replace(self, name=name, flags=flags)


def option(default: Any = dataclasses.MISSING, **kwargs: Any):
    """A dataclass field that is also a command-line option (``kwargs``: :class:`Option`'s);
    without ``default`` the option is required."""
    return field(default=default, metadata={"option": Option(**kwargs)})


def field_options(config_class: type, skip: tuple[str, ...] | frozenset = ()) -> list[Option]:
    """The options declared on ``config_class``'s fields (but those named in ``skip``): its own
    fields' first, in field order, then those of the classes it derives from, nearest first
    (``--split-from-dev``, ``--seeds``; then the loop's). A field a subclass declares again
    without :func:`option` (``epochs: int = 6``) keeps the option its base class declared."""
    declared: dict[str, Option] = {}
    rank: dict[str, int] = {}
    for depth, cls in enumerate(config_class.__mro__):
        fields = getattr(cls, "__dataclass_fields__", {})
        for index, name in enumerate(vars(cls).get("__annotations__", {})):
            opt = fields[name].metadata.get("option") if name in fields else None
            if opt is not None and name not in skip and name not in declared:
                declared[name], rank[name] = opt.named(name), (depth, index)
    names = sorted(declared, key=lambda n: rank[n])
    return [declared[n] for n in names]


@dataclass(frozen=True)
class Commands:
    """A task's three commands: their help (the text ``--help`` shows; the first paragraph is
    the line in the group's command list) and the ``evaluate``/``predict`` options, in order.

    ``evaluate`` options ``output``, ``predictions`` and ``confusion`` are the command's own
    (files it writes); every other option is passed by name to the task's ``evaluate``. Of
    ``predict``'s, ``input`` and ``output`` are passed positionally, the rest by name.
    """

    finetune: str
    evaluate: str
    predict: str
    evaluate_options: tuple[Option, ...] = ()
    predict_options: tuple[Option, ...] = ()


# Options every task's evaluate/predict commands share (a task lists them where it wants them)
SAVED_MODEL = Option("Run directory (or its model/ folder).", ("--model", "-m"), name="model",
                     type=str, default=REQUIRED)
SPLIT = Option("train, dev or test.", ("--split",), name="split", type=str,
               choices=("train", "dev", "test", "valid", "validation"), default="test")
METRICS_OUTPUT = Option("Also write metrics as JSON here.", ("--output",), name="output",
                        type=Path)
CONFUSION = Option("Also write the confusion matrix as PATH.csv and PATH.png.", ("--confusion",),
                   name="confusion", type=Path)
PREDICT_OUTPUT = Option("Write here (atomically) instead of standard output.", ("--output", "-o"),
                        name="output", type=Path)
SKIP_BAD_LINES = Option("Skip and count unreadable lines.", ("--skip-bad-lines",),
                        name="skip_bad_lines", type=bool, default=False)
MAX_EVAL_SAMPLES = Option("Score only the first N examples of the split (as finetune's "
                          "--max-eval-samples).", ("--max-eval-samples",), name="max_eval_samples",
                          type=int, min=1)


EXECUTORS = ("local", "slurm", "submitit-local")
"""Where jobs run (:mod:`bertkit.jobs.executors`): processes on this machine, a Slurm job array
through submitit, or the same submitit jobs on this machine (a trial of a cluster run)."""
EXECUTOR_OPTIONS = (
    Option("Where the jobs run: local (processes on this machine), slurm (one Slurm job array "
           "through submitit: pip install 'bertkit\\[slurm]'), submitit-local (the same jobs "
           "through submitit on this machine: a trial of a cluster run).", ("--executor",),
           name="executor", type=str, choices=EXECUTORS, default="local"),
    Option("Slurm partition of the jobs (sbatch --partition).", ("--slurm-partition",),
           name="slurm_partition", type=str, default=None),
    Option("Slurm account the jobs are charged to (sbatch --account).", ("--slurm-account",),
           name="slurm_account", type=str, default=None),
    Option("GPUs per job (sbatch --gpus-per-node).", ("--slurm-gpus-per-job",),
           name="slurm_gpus_per_job", type=int, min=0, default=0),
    Option("CPU cores per job (sbatch --cpus-per-task), the job's thread count.",
           ("--slurm-cpus-per-job",), name="slurm_cpus_per_job", type=int, min=1, default=4),
    Option("Memory per job in GB (sbatch --mem; none: the partition's default).",
           ("--slurm-mem-gb",), name="slurm_mem_gb", type=int, min=1, default=None),
    Option("Time limit of each job in minutes (sbatch --time); a job stopped at it leaves its "
           "work unfinished, for the next run.", ("--slurm-time",), name="slurm_time", type=int,
           min=1, default=240),
    Option("At most K of the jobs running at once (sbatch --array=0-N%K; submitit-local: K "
           "processes).", ("--slurm-max-running",), name="slurm_max_running",
           type=int, min=1, default=16),
)
"""How and where jobs run, declared once: ``bench run`` (as fields of
:class:`bertkit.jobs.executors.ExecutorSettings`) and the streaming ``predict`` commands take them."""
SHARDS = Option("With --executor slurm or submitit-local: N shard jobs (one array), then the "
                "merge (on this machine: --jobs N).", ("--shards",), name="shards", type=int,
                min=1, default=None)


def stream_options(records: str = "Records (sentences or lines)", chunk: int = 2000,
                   how: str = "each chunk is sorted by length for its batches and written"
                   ) -> tuple[Option, ...]:
    """The streaming ``predict`` options (:mod:`bertkit.predict`) with ``--chunk-size`` counting
    ``records`` (its help), ``chunk`` of them by default, ``how`` a chunk is done (its help)."""
    return (
        Option(f"{records} per chunk: {how}, in input order, when done; a resume repeats at "
               "most one.",
               ("--chunk-size",), name="chunk_size", type=int, min=1, default=chunk),
        Option("Continue an interrupted run (OUTPUT.part, OUTPUT.state.json) after its last "
               "finished chunk; refuses another input, model or format.", ("--resume",),
               name="resume", type=bool, default=False),
        Option("I/N: predict only chunks I, I+N, I+2N, ... (1-based) into OUTPUT.shard-I-of-N, "
               "for N processes or machines; 'bertkit predict merge OUTPUT' joins them.",
               ("--shard",), name="shard", type=str, default=None),
        Option("Run N processes on this machine (one thread each), a shard each, then merge.",
               ("--jobs", "-j"), name="jobs", type=int, min=1, default=1),
        SHARDS, *EXECUTOR_OPTIONS,
    )


STREAM_OPTIONS = stream_options()
"""``predict`` options of a task that streams (:mod:`bertkit.predict`; with
:data:`SKIP_BAD_LINES`); they go to the shared driver, not to the task."""
DEVICE = Option("auto, cpu, cuda, cuda:N or mps.", ("--device",), name="device", type=str,
                default="auto")
PRECISION = Option("", ("--precision",), name="precision", type=str, default="auto")
"""``--precision``: its help and choices are the runtime's (filled in by the CLI)."""


def batch_size(unit: str, default: int) -> Option:
    """``--batch-size``/``-b`` of ``evaluate``/``predict``: ``unit`` (``Windows``) per batch."""
    return Option(f"{unit} per batch.", ("--batch-size", "-b"), name="batch_size", type=int,
                  min=1, default=default)


def shown_default(name: str, value: Any, flags: tuple[str, ...] = ()) -> str | None:
    """How ``--help`` shows a default: a switch ``--x/--no-x`` by the name of its setting
    (``no-fsdp``), a number as :func:`bertkit.settings.layers.format_value` writes it (``5e-5``, ``0.1``);
    None: show none (None, or a plain switch such as ``--resume`` or ``--skip-bad-lines``).

    >>> shown_default("fsdp", False, ("--fsdp/--no-fsdp",)), shown_default("lr", 5e-05)
    ('no-fsdp', '5e-5')
    """
    if value is None:
        return None
    if isinstance(value, bool):
        if flags and not any("/" in f for f in flags):
            return None  # a plain switch, off unless given
        flag = name.replace("_", "-")
        return flag if value else f"no-{flag}"
    from bertkit.settings.layers import format_value

    return format_value(value)
