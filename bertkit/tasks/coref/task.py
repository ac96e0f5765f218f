"""``finetune coref``, ``evaluate coref`` and ``predict coref`` as importable functions.

The CLI in ``bertkit/cli`` builds the three commands from the registry; these functions are
:func:`finetune_coref`, :func:`evaluate_coref` and :func:`predict_coref`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.console import Console

from bertkit.data.conll2012 import CorefDocument, format_conll2012
from bertkit.encoders import load_tokenizer
from bertkit.errors import BertkitError
from bertkit.io import write_text
from bertkit.metrics.coref import coref_scores
from bertkit.outputs.modelcard import CardSpec, Metric
from bertkit.tasks.base import (TaskHeader, Evaluation, ScoredSplit, TaskData, TaskRun,
                                report_metrics, task_functions)
from bertkit.tasks.common import parse_split
from bertkit.tasks.coref.card import USAGE, card_notes
from bertkit.tasks.coref.config import CorefConfig
from bertkit.tasks.coref.data import (EXTENSIONS, load_documents, read_predict_input,
                                      resolve_coref)
from bertkit.tasks.coref.encoding import DocumentBatches, encode_documents
from bertkit.tasks.coref.inference import (format_jsonl, loaded, resolve_documents,
                                           word_splitter)
from bertkit.tasks.coref.model import CorefModel, build_model
from bertkit.tasks.coref.suite import SUITE
from bertkit.tasks.driver import finetune

CARD = CardSpec(
    "finetune coref", "feature-extraction", "Coreference resolution (encoder + head)", "AutoModel",
    (Metric("conll_f1", "f1", "CoNLL F1 (mean of MUC, B-cubed, CEAF-e F1; with singletons)",
            "CoNLL F1", 1.0),
     Metric("conll_f1_nosingletons", "f1", "CoNLL F1 without singletons", "CoNLL F1 -sing.", 1.0),
     Metric("muc_f1", "f1", "MUC F1", "MUC", 1.0),
     Metric("bcub_f1", "f1", "B-cubed F1", "B3", 1.0),
     Metric("ceafe_f1", "f1", "CEAF-e (phi4) F1", "CEAF-e", 1.0)),
    USAGE, notes=card_notes)
"""The model card (:mod:`bertkit.outputs.modelcard`); its metrics are the task's headline metrics."""


def score(docs: Sequence[CorefDocument], predicted) -> dict:
    """:func:`~bertkit.metrics.coref.coref_scores` (points) of ``predicted`` against gold."""
    return coref_scores([d.clusters for d in docs], predicted)


def _long_mentions(docs: Sequence[CorefDocument], width: int) -> int:
    return sum(1 for d in docs for c in d.clusters or [] for s, e in c if e - s + 1 > width)


class CorefTask(TaskHeader, name="coref", config_class=CorefConfig,
                extensions=EXTENSIONS, unit="documents", select_metric="conll_f1",
                card=CARD, suite=SUITE):
    """Coreference resolution (start-to-end span ranking) as a
    :class:`~bertkit.tasks.base.Task`; best epoch by dev CoNLL F1 with singletons."""

    def load(self, cfg: CorefConfig, splits: tuple[str, ...], console: Console | None = None
             ) -> TaskData:
        """Read ``splits`` of ``cfg.data`` (files or folders of CoNLL-2012 documents)."""
        paths = resolve_coref(cfg.data, splits)
        return TaskData({s: load_documents(p, console=console) for s, p in paths.items()},
                        {s: str(p) for s, p in paths.items()})

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """The training documents' text for TAPT, one document a line (words joined by
        spaces, as a paragraph of a corpus), of the first ``max_examples`` documents (all: None)."""
        docs = load_documents(resolve_coref(data, ("train",))["train"])[:max_examples]
        return [" ".join(d.words) for d in docs]

    def prepare(self, cfg: CorefConfig, model_name: str, data: TaskData, runtime,
                console: Console | None = None) -> TaskRun:
        """The model, encoded training documents and dev/test/save."""
        train_d, dev_d, test_d = (data.splits[k] for k in ("train", "dev", "test"))
        tokenizer = load_tokenizer(model_name)
        model = build_model(model_name, cfg.ffnn_size, cfg.max_span_width, cfg.dropout,
                            cfg.top_lambda)
        model.head_lr = cfg.head_lr
        items, counts = encode_documents(train_d, tokenizer, cfg.max_length)
        batches = DocumentBatches(items, cfg.batch_size, cfg.seed, tokenizer.pad_token_id,
                                  cfg.max_train_segments)
        dev_items, _ = encode_documents(dev_d, tokenizer, cfg.max_length)
        singletons = cfg.singletons == "on"
        longest = max(len(d.words) for d in train_d + dev_d + test_d)
        summary = (f"data: {len(train_d)}/{len(dev_d)}/{len(test_d)} documents (train/dev/test), "
                   f"longest {longest} words; segments of {cfg.max_length} pieces, training on "
                   f"at most {cfg.max_train_segments} per document; model {model_name}; "
                   f"device {runtime.device}, {runtime.precision}")

        def evaluate_dev(m: CorefModel) -> dict:
            return score(dev_d, resolve_documents(m, tokenizer, dev_d, runtime, cfg.max_length,
                                                  cfg.eval_batch_size, singletons, dev_items))

        def test(m: CorefModel, console: Console | None = None) -> ScoredSplit:
            predicted = resolve_documents(m, tokenizer, test_d, runtime, cfg.max_length,
                                          cfg.eval_batch_size, singletons)
            return ScoredSplit(score(test_d, predicted), lambda run_dir: write_text(
                run_dir / "test_predictions.conll", format_conll2012(test_d, predicted)))

        def save(m: CorefModel, directory: Path) -> None:
            m.save(directory, tokenizer, {"max_length": cfg.max_length, "base_model": model_name,
                                          "data": cfg.data, "singletons": cfg.singletons})

        return TaskRun(model, batches, evaluate_dev, test, save, summary=summary, results={
                            "splits": data.sources, "long_words": counts["long_words"],
                            "gold_mentions_longer_than_max_span_width": _long_mentions(
                                test_d, cfg.max_span_width),
                            "scoring": "reference CoNLL scorer (Pradhan et al. 2014) metrics, "
                                       "points; conll_f1 with singletons (headline), "
                                       "*_nosingletons without"})

    def report(self, results: dict, title: str):
        """MUC, B-cubed, CEAF-m, CEAF-e, BLANC and CoNLL F1, with and without singletons."""
        from rich.table import Table

        m = report_metrics(results)
        table = Table(title=title)
        for col in ("metric", "R", "P", "F1", "R -sing.", "P -sing.", "F1 -sing."):
            table.add_column(col, justify="left" if col == "metric" else "right")
        for name, label in (("muc", "MUC"), ("bcub", "B-cubed"), ("ceafm", "CEAF-m"),
                            ("ceafe", "CEAF-e"), ("blanc", "BLANC")):
            table.add_row(label, *(f"{m.get(f'{name}_{p}{s}', float('nan')):.2f}"
                                   for s in ("", "_nosingletons") for p in ("r", "p", "f1")))
        table.add_row("CoNLL", "", "", f"{m.get('conll_f1', float('nan')):.2f}", "", "",
                      f"{m.get('conll_f1_nosingletons', float('nan')):.2f}")
        return table

    evaluate, predict, stream = task_functions("coref")


def stream_coref(model_dir: str, input_path: str, input_format: str = "auto",
                 output_format: str = "auto", output: str | None = None, device: str = "auto",
                 precision: str = "auto", console: Console | None = None):
    """``predict coref`` for :mod:`bertkit.predict` (:mod:`bertkit.tasks.coref.stream`)."""
    from bertkit.tasks.coref.stream import coref_predictor

    return coref_predictor(model_dir, input_path, input_format, output_format, output,
                           device, precision, console)


TASK = CorefTask()


def finetune_coref(cfg: CorefConfig, console: Console | None = None) -> dict:
    """Fine-tune, keep the best dev epoch (CoNLL F1 with singletons), score test, write the run
    (through the shared driver, :func:`bertkit.tasks.driver.finetune`).

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad data, model, settings or output directory.
    """
    return finetune(TASK, cfg, console)


def evaluate_coref(model_dir: str, data: str, split: str = "test", device: str = "auto",
                   precision: str = "auto", console: Console | None = None,
                   batch_size: int = 1, max_eval_samples: int | None = None) -> Evaluation:
    """Score a saved model on one split of ``data`` (reference-scorer metrics, points).

    Args:
        max_eval_samples: score only the first N documents of the split (None: all).

    Raises:
        BertkitError: no saved model there, bad data, unknown split.
    """
    split = parse_split(split)
    model, meta, tokenizer, runtime, max_length = loaded(model_dir, device, precision, console)
    docs = load_documents(resolve_coref(data, (split,))[split], console=console)[:max_eval_samples]
    predicted = resolve_documents(model, tokenizer, docs, runtime, max_length, batch_size,
                                  meta.get("singletons", "on") == "on")
    return Evaluation(score(docs, predicted), lambda: format_conll2012(docs, predicted), docs,
                      predicted)


def predict_coref(model_dir: str, input_path: str, output: str | None = None,
                  input_format: str = "auto", output_format: str = "auto", device: str = "auto",
                  precision: str = "auto", console: Console | None = None) -> str:
    """Find the entities of CoNLL-2012, plain-text or JSON-lines documents, the whole file at
    once (``bertkit predict coref`` streams the same output, a chunk of documents at a time:
    :mod:`bertkit.tasks.coref.stream`).

    Output: CoNLL-2012 (every column as it came but the last, for CoNLL input; ``name part
    index word`` for text) or JSON lines (:func:`format_jsonl`); ``auto`` picks JSON lines when
    the output file or the input ends in ``.jsonl``.

    Raises:
        BertkitError: bad input (file and line), unknown format, or no saved model.
    """
    if input_format not in ("auto", "conll", "text", "jsonl"):
        raise BertkitError(f"unknown input format '{input_format}'",
                           expected="auto, conll, text or jsonl")
    if output_format not in ("auto", "conll", "jsonl"):
        raise BertkitError(f"unknown output format '{output_format}'",
                           expected="auto, conll or jsonl")
    model, meta, tokenizer, runtime, max_length = loaded(model_dir, device, precision, console)
    path = Path(input_path)
    docs, texts, offsets, fmt = read_predict_input(path, input_format, word_splitter(tokenizer))
    predicted = resolve_documents(model, tokenizer, docs, runtime, max_length, 1,
                                  meta.get("singletons", "on") == "on")
    as_jsonl = output_format == "jsonl" or (output_format == "auto" and (
        str(output or "").endswith(".jsonl") or fmt == "jsonl"))
    text = format_jsonl(docs, predicted, texts, offsets) if as_jsonl else \
        format_conll2012(docs, predicted)
    if output:
        write_text(output, text)
    return text
