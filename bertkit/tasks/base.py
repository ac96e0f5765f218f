"""The ``Task`` protocol: what a fine-tuning task gives the shared core.

Composition, not a class hierarchy (torchtune's ``recipe_interfaces.py``): a task is any object
with these attributes; no task subclasses anything of the core, and the core imports no task
(tasks are found by name in :mod:`bertkit.tasks.registry`). The one fine-tuning driver,
:func:`bertkit.tasks.driver.finetune`, owns what every task used to repeat: settings checks,
model resolution, the length check against the encoder's positions, the run directory and its
``config.yaml``, seeding, the ``--split-from-dev`` rule, ``--max-*-samples``, training with
best-on-dev selection, test scoring, saving the model, ``results.json`` and ``--seeds``.

A task supplies:

* ``name`` (``ner``), ``config_class`` (a :class:`~bertkit.tasks.finetune_config.FinetuneConfig`
  dataclass with ``model``, ``data``, ``max_length``, ...), ``data_kind`` and ``extensions`` (where
  registered sets live under ``$BERTKIT_DATA``: ``<data_kind>/<name>/train<ext>``), ``unit``
  (what an example is: ``sentences``, ``pairs``, ``texts``) and ``select_metric`` (dev metric
  that picks the best epoch, higher is better).
* ``load(cfg, splits, console) -> TaskData``: read the splits named.
* ``prepare(cfg, model_name, data, runtime, console) -> TaskRun``: labels, model, tokenizer,
  encoded training batches and the run's steps (dev, choose on dev, test, save; the driver
  calls them in order) (may raise
  :class:`~bertkit.errors.BertkitError` on bad data: nothing has been written yet).
* ``report(results, title)``: the rich table printed after a run (and by ``evaluate``).
* ``evaluate`` (returning an :class:`Evaluation`, the one result type of every task) and
  ``predict``: the importable functions behind ``bertkit evaluate|predict <name>``.
* ``card`` (its model card, :class:`~bertkit.outputs.modelcard.CardSpec`) and ``headline`` (its headline
  metrics, the card's: one list for the card, ``adapt`` and the ``--seeds`` summary).
* ``text_lines(data, max_examples)``: the unlabelled training text TAPT reads (``bertkit adapt
  --task-text TASK:DATA``).
* ``suite`` (a :class:`SuiteSpec`, or None): what ``bertkit bench`` needs to enter the task in a
  suite (its metrics, their per-test-item statistics, its test text, its families); ``bench``
  reads it through the registry and names no task.

A task's class ends in the same two lines, written with the helpers here: ``report =
table_report(its_table)`` (:func:`table_report`) and ``evaluate, predict, stream =
task_functions(name)``: its module's ``evaluate_<name>``, ``predict_<name>`` and
``stream_<name>`` functions (:class:`ModuleFunction`).

Its command line is declared on its settings (:mod:`bertkit.settings.options`): ``option(...)`` fields
are the ``finetune`` options, ``config_class.commands`` the three commands' help and the
``evaluate``/``predict`` options; :mod:`bertkit.cli._tasks` builds the commands. So a new task is
its package, its metrics module, its data-set lines (:mod:`bertkit.data.sets`) and one line in
:mod:`bertkit.tasks.registry`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

import torch


@dataclass
class TaskData:
    """Examples per split as a task reads them.

    Attributes:
        splits: ``{"train"|"dev"|"test": [example, ...]}`` (sentences, pairs, texts).
        sources: where each split came from (file path or ``hub:<id>``).
        info: facts for ``results.json`` (e.g. ``skipped_bad_lines``), merged into it.
        note: one line printed before training (e.g. how a split was derived), or None.
        full_train: the training examples before ``--max-train-samples`` (the whole train file,
            or dev less its held-out part); tasks take their label set from it, so a sample
            limit never changes the labels. None: the same as ``splits["train"]``.
    """

    splits: dict[str, list]
    sources: dict[str, str]
    info: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    full_train: list | None = None

    @property
    def label_examples(self) -> list:
        """The examples a task takes its label set from: ``full_train`` when the driver set it
        (before ``--max-train-samples``), else the training split."""
        return self.full_train if self.full_train is not None else self.splits["train"]


@dataclass
class ScoredSplit:
    """Test-split scoring: the metrics and a writer for the task's prediction files.

    Attributes:
        metrics: as the task's scorer returns them (``results.json``'s ``test``).
        write: ``write(run_dir)`` writes ``test_predictions.*`` (and plots) atomically.
    """

    metrics: dict
    write: Callable[[Path], None]


@dataclass
class Evaluation:
    """What a task's ``evaluate`` returns, for every task: the metrics and the predictions.

    Attributes:
        metrics: the scores of the split (as ``results.json``'s ``test``; also the report's input).
        format_predictions: ``format_predictions() -> str``: the task's prediction file text
            (CoNLL, CoNLL-U, JSON lines), made only when asked for (``--predictions``).
        examples: the examples scored (sentences, pairs, texts, questions).
        predictions: the task's predictions, in the examples' order (tags, labels, parses,
            answers), for callers that use them directly.
    """

    metrics: dict
    format_predictions: Callable[[], str]
    examples: list = field(default_factory=list)
    predictions: Any = None

    def predictions_text(self) -> str:
        """The prediction file's text (:attr:`format_predictions`)."""
        return self.format_predictions()


@dataclass
class TaskRun:
    """One fine-tuning run of a task (what ``prepare`` returns): the model, its encoded training
    batches and the run's steps, which the driver (:func:`bertkit.tasks.driver.finetune`) calls
    in this order, each once:

    1. train: ``model`` on ``batches``, ``evaluate(model)`` at each evaluation (best on dev);
    2. ``choose_on_dev(model)``: decisions taken on dev with the final model that the test pass
       applies (multi-label cls: one threshold per label; QA on SQuAD 2.0: the no-answer
       threshold); not prediction, so not in ``predict_seconds``;
    3. ``test(model, console)``: encode and score test (timed: ``predict_seconds``);
    4. ``save(model, directory)``, then ``results.json``, then the test predictions
       (``ScoredSplit.write``).

    ``test`` and ``save`` read what ``choose_on_dev`` chose; neither depends on the other.

    Attributes:
        model: ``model(**batch)`` returns the loss (see :func:`bertkit.training.train`).
        batches: the training :class:`~bertkit.training.loop.BatchSource`.
        evaluate: ``evaluate(model) -> metrics`` on the dev split (model in eval mode).
        test: ``test(model, console) -> ScoredSplit`` on the test split.
        save: ``save(model, directory)``: the Hugging Face layout plus ``bertkit.json``.
        results: task-specific keys for ``results.json`` (labels, pooling, truncation counts).
        summary: one line printed before training (data sizes, labels, model, device).
        select_metric: the dev metric that picks the best epoch in this run, when a setting
            chooses it (``finetune ner --metric token-macro``); None: the task's own.
        choose_on_dev: ``choose_on_dev(model) -> dict | None``: step 2; what it returns (e.g.
            ``{"thresholds": [...]}``) is recorded as ``results.json``'s ``chosen_on_dev``.
            None: the task decides nothing on dev.
        before_test: the former name of ``choose_on_dev`` (used when that is None).
    """

    model: torch.nn.Module
    batches: Any
    evaluate: Callable[[torch.nn.Module], dict]
    test: Callable[..., ScoredSplit]
    save: Callable[[torch.nn.Module, Path], None]
    results: dict[str, Any] = field(default_factory=dict)
    summary: str | None = None
    select_metric: str | None = None  # this run's selection metric when a setting chooses it
    choose_on_dev: Callable[[torch.nn.Module], dict | None] | None = None
    before_test: Callable[[torch.nn.Module], Any] | None = None

    def choose(self, model: torch.nn.Module) -> dict:
        """Step 2 (:attr:`choose_on_dev`); ``{}`` when the task decides nothing on dev."""
        step = self.choose_on_dev or self.before_test
        chosen = step(model) if step is not None else None
        return chosen if isinstance(chosen, dict) else {}


Prepared = TaskRun
"""The former name of :class:`TaskRun`."""


@runtime_checkable
class Task(Protocol):
    """What a fine-tuning task gives the shared core (see the module docstring)."""

    name: str
    config_class: type
    data_kind: str
    extensions: tuple[str, ...]
    unit: str
    select_metric: str

    def load(self, cfg: Any, splits: tuple[str, ...], console: Any = None) -> TaskData:
        """Read ``splits`` of ``cfg.data``.

        Raises:
            BertkitError: unknown set, missing split file, malformed file (file and line named).
        """

    def prepare(self, cfg: Any, model_name: str, data: TaskData, runtime: Any,
                console: Any = None) -> TaskRun:
        """Build the model and the training batches and close over dev/test/save.

        Raises:
            BertkitError: training data the task cannot learn from (e.g. one label).
        """

    def report(self, results: dict, title: str) -> Any:
        """The rich renderable that shows ``results["test"]`` (or evaluate's metrics)."""

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """The training split's unlabelled text for TAPT, one line per sentence or text.

        Raises:
            BertkitError: as :meth:`load`.
        """

    card: Any  # bertkit.outputs.modelcard.CardSpec
    headline: tuple  # of bertkit.outputs.modelcard.Metric, the main score first
    evaluate: Callable[..., Evaluation]
    predict: Callable[..., Any]


@dataclass(frozen=True)
class SuiteMetric:
    """A metric a suite may name for a task (lm-evaluation-harness's per-task ``metric_list``:
    the task declares its metric, its averaging and how to score one test item; the harness
    names no task).

    Attributes:
        name: the suite's name for it (``entity_f1``, ``micro_f1``); a suite file's ``metric``.
        key: its key in ``results.json``'s ``test``: the task's own scorer's number, which the
            report shows (never recomputed).
        description: what is averaged how, and the source (``bench list``, the report).
        scale: the factor from the ``results.json`` value to points: 100 for a fraction, 1 for a
            score already in points (SQuAD F1, CoNLL F1); the task's headline ``Metric.scale``.
        stats: ``stats(run_dir, results) -> [N, K] float array``: the sufficient statistics of
            each of the run's N test items (sentence, pair, document), read from its prediction
            files (``results``: the run's ``results.json``); None where the predictions allow no
            per-item statistics (then no paired bootstrap), or the call returns None where the
            gold cannot be read on this machine. May raise OSError, ValueError or KeyError on an
            unreadable file.
        score: ``score(summed [..., K]) -> [...]``: the metric from statistics summed over items
            (in the unit of ``key``), so a resampled score is one matrix product (the paired
            bootstrap, Koehn 2004; Berg-Kirkpatrick et al. 2012).
        floor: ``floor(test) -> str | None``: why the test figures (``results.json``'s ``test``)
            are at a constant prediction's level, a phrase ending in its figures in parentheses,
            or None (issue 17 item 6); None: no constant baseline is known for the metric.
        zero_shot: ``zero_shot(test) -> str | None``: why the score is below what the encoder
            scores with no training (issue 63), or None.
    """

    name: str
    key: str
    description: str
    scale: float = 100.0
    stats: Callable[[Path, dict], Any] | None = None
    score: Callable[[Any], Any] | None = None
    floor: Callable[[dict], str | None] | None = None
    zero_shot: Callable[[dict], str | None] | None = None


@dataclass(frozen=True)
class SuiteSpec:
    """What a task declares so that ``bertkit bench`` can enter it in a suite (spaCy's
    registry: a component declares what the pipeline needs to know about it). ``bench`` reads it
    from the task (:func:`bertkit.tasks.registry.get_task`) and refuses, by name, a task that
    declares none, a metric it does not declare and test text it cannot give.

    Attributes:
        metrics: the metrics a suite may name for the task (:class:`SuiteMetric`).
        families: ``{family: description}`` the task may stand in, for the suite score (BLURB's
            mean of family means, Gu et al. 2021, Table 2; SciBERT's and SpanBERT's families).
        test_texts: ``test_texts(path) -> list[str]``: the texts of a test split (a file, or a
            folder of documents) read with the task's own reader, one sentence or text each,
            for the contamination check (:mod:`bertkit.bench.contamination`); None: the task
            cannot give them. Raises BertkitError on a file its reader refuses.
        distinct_texts: the contamination count takes each distinct text once (pair and
            relation sets, where one sentence carries many examples) rather than each sentence
            every time (sentence files).
        settings: ``{key: choices}``: finetune settings a suite's task entry may set as its own
            key (``architecture: bi-encoder``), with the values allowed.
    """

    metrics: tuple[SuiteMetric, ...]
    families: dict[str, str]
    test_texts: Callable[[Path], list[str]] | None = None
    distinct_texts: bool = False
    settings: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def metric(self, name: str) -> SuiteMetric | None:
        """The declared metric called ``name``, or None."""
        return next((m for m in self.metrics if m.name == name), None)
class TaskHeader:
    """The attributes every task declares, given once on its class line (the
    :class:`Task` protocol's ``name`` ... ``suite``)::

        class NERTask(TaskHeader, name="ner", config_class=NERConfig, extensions=EXTENSIONS,
                      unit="sentences", select_metric="f1", card=CARD, suite=SUITE):

    ``data_kind`` is the task's name unless given; ``headline`` is the card's metrics (one list
    for the card, ``adapt`` and the ``--seeds`` summary).
    """

    def __init_subclass__(cls, *, name: str, config_class: type, extensions: tuple[str, ...],
                          unit: str, select_metric: str, card: Any, suite: Any = None,
                          data_kind: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.name, cls.config_class, cls.extensions = name, config_class, extensions
        cls.data_kind = data_kind or name
        cls.unit, cls.select_metric = unit, select_metric
        cls.card, cls.headline, cls.suite = card, card.metrics, suite


def report_metrics(results: dict) -> dict:
    """The metrics a task's ``report`` shows: a run's ``results["test"]``, or ``evaluate``'s
    metrics as they are (they have no ``test`` key).

    >>> report_metrics({"test": {"f1": 0.5}, "dev": {}}), report_metrics({"f1": 0.4})
    ({'f1': 0.5}, {'f1': 0.4})
    """
    return results["test"] if "test" in results else results


def table_report(table: Callable[[dict, str], Any]) -> Callable[[Any, dict, str], Any]:
    """A task's :meth:`Task.report` made of its table: ``report = table_report(entity_table)``
    in the task's class shows :func:`report_metrics` with ``table(metrics, title)``.

    Args:
        table: ``table(metrics, title) -> renderable`` (a rich table, :mod:`bertkit.outputs.tables`).
    """

    def report(self, results: dict, title: str) -> Any:
        return table(report_metrics(results), title)

    report.__doc__ = f"The test metrics as :func:`{table.__module__}.{table.__name__}` shows them."
    return report


class ModuleFunction:
    """A task's class attribute that is a function of the task's own module, looked up when read,
    so that the function may stand below the class: ``evaluate = ModuleFunction("evaluate_ner")``
    makes ``TASK.evaluate`` the module's ``evaluate_ner`` itself (its signature and docstring,
    which :mod:`bertkit.cli.predict` reads, are the function's own).

    Raises:
        AttributeError: on reading, when the module has no such function (so ``hasattr(task,
            "stream")`` is False for a task whose module defines no ``stream_<name>``).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.module = ""

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.module = owner.__module__

    def __get__(self, obj: Any, owner: type | None = None) -> Callable[..., Any]:
        module = sys.modules[self.module]
        try:
            return getattr(module, self.name)
        except AttributeError:
            raise AttributeError(f"{module.__name__} has no function {self.name}") from None


def task_functions(name: str, verbs: tuple[str, ...] = ("evaluate", "predict", "stream")
                   ) -> tuple[ModuleFunction, ...]:
    """One :class:`ModuleFunction` per verb, naming the task module's ``<verb>_<name>``:
    ``evaluate, predict, stream = task_functions("ner")`` in the task's class.

    >>> [f.name for f in task_functions("ner")]
    ['evaluate_ner', 'predict_ner', 'stream_ner']
    """
    return tuple(ModuleFunction(f"{verb}_{name}") for verb in verbs)


NOT_SCORES = ("loss", "seconds", "per_second", "perplexity", "count", "tokens", "examples",
              "mse")
"""Parts of a metric's name that mark it as no score (shown as it is, its interval not clipped);
so do the endings of :data:`NOT_SCORE_ENDINGS`."""
NOT_SCORE_ENDINGS = ("total", "missing", "f1_thresh", "exact_thresh", "threshold", "_pairs")
"""Ends of the names of counts and decision thresholds (SQuAD's ``HasAns_total``,
``best_f1_thresh``, sim's ``cut_pairs``; ``f1_at_dev_thresh`` is a score)."""


def score_scale(task: Any, key: str) -> float | None:
    """A metric's factor to points, decided once from the task's declaration, never from values.

    A task's scores share one scale, that of its headline metrics
    (:attr:`bertkit.outputs.modelcard.Metric.scale`: 100 for a fraction, 1 for a score already in
    points, as the official SQuAD scorer's); a headline metric has its own. A metric named as a
    loss, time, rate, count or threshold (:data:`NOT_SCORES`, :data:`NOT_SCORE_ENDINGS`) is no
    score: None.

    Args:
        task: the :class:`Task` (its ``headline``), or None: a task whose scores are fractions.
        key: the metric's key in ``results.json``'s ``dev``/``test``.

    >>> score_scale(None, "f1"), score_scale(None, "train_seconds"), score_scale(None, "total")
    (100.0, None, None)
    """
    headline = tuple(getattr(task, "headline", None) or ())
    for metric in headline:
        if metric.key == key:
            return metric.scale
    if any(part in key for part in NOT_SCORES) or key.endswith(NOT_SCORE_ENDINGS):
        return None
    return headline[0].scale if headline else 100.0


def score_bounds(task: Any, key: str) -> tuple[float | None, float | None] | None:
    """The range of a metric's values in its own units, from the task's declaration: a headline
    metric's ``bounds`` (:attr:`bertkit.outputs.modelcard.Metric.bounds`; a correlation's ``(-1, 1)``),
    else ``(0, 100 / scale)`` for a score (a rate), None for what is no score
    (:func:`score_scale` is None). ``--seeds`` clips a seed interval to it.

    >>> score_bounds(None, "f1"), score_bounds(None, "eval_loss")
    ((0.0, 1.0), None)
    """
    for metric in tuple(getattr(task, "headline", None) or ()):
        if metric.key == key and metric.bounds is not None:
            return metric.bounds
    factor = score_scale(task, key)
    return None if not factor else (0.0, 100.0 / factor)
