"""``finetune sim``, ``evaluate sim`` and ``predict sim``: sentence-pair similarity as a
regression, a :class:`~bertkit.tasks.base.Task` run by the shared driver.

BERT's STS-B setup (Devlin et al., 2019, §4.1; Hugging Face's ``run_glue.py`` with
``num_labels=1``): ``[CLS] text [SEP] pair [SEP]``, the pooled ``[CLS]`` vector into a linear layer
with one output, mean squared error against the gold score (raw units, BIOSSES 0-4). BLURB scores
BIOSSES by Pearson r (Gu et al., 2021), so the best dev epoch is chosen by it; Spearman rho and the
MSE are reported beside it (:mod:`bertkit.metrics.sim`). The saved model is a plain
``AutoModelForSequenceClassification`` (``num_labels=1``, ``problem_type="regression"``): its
single logit is the score, no bertkit needed.

BIOSSES has 64 training pairs and 20 test pairs: one test pair moves Pearson by several points,
so compare seeds (BLURB averages 10), never single runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from bertkit.batching import GroupedBatches, pad_right
from bertkit.encoders import (LOAD_ERRORS, _short, attention_implementation, load_tokenizer,
                              quiet_transformers)
from bertkit.errors import BertkitError
from bertkit.inference import run_batches, sorted_batches
from bertkit.io import write_text
from bertkit.metrics.sim import similarity_scores
from bertkit.modelcard import CardSpec, Metric
from bertkit.tasks.base import Evaluation, ScoredSplit, TaskData, TaskRun
from bertkit.tasks.common import (parse_split, prediction_line, read_saved_model,
                                  warn_bad_lines, write_saved_model)
from bertkit.tasks.driver import finetune
from bertkit.tasks.sim.config import SimConfig
from bertkit.tasks.sim.data import (EXTENSIONS, Fields, PairExample, load_sim_data,
                                    read_pairs)
from bertkit.training.devices import Runtime, make_runtime


def encode(xs: Sequence[PairExample], tokenizer, max_length: int) -> tuple[list[dict], int]:
    """Each pair as ``[CLS] text [SEP] pair [SEP]`` (token types 0 then 1), cut longest first
    to ``max_length`` pieces (the tokenizer's ``longest_first``).

    Returns:
        (one dict per pair: ``input_ids`` ``[T]``, ``token_type_ids`` ``[T]`` when the
        tokenizer uses them, ``labels`` (float score, NaN when unlabelled); the number of pairs
        that were cut).
    """
    if not xs:
        return [], 0
    a, b = [x.text for x in xs], [x.text_pair for x in xs]
    full = tokenizer(a, b, truncation=False)["input_ids"]
    enc = tokenizer(a, b, truncation="longest_first", max_length=max_length)
    types = enc.get("token_type_ids")
    items = [{"input_ids": np.asarray(ids, dtype=np.int64),
              "token_type_ids": np.asarray(types[i], dtype=np.int64) if types else None,
              "labels": np.float32(x.score if x.score is not None else np.nan)}
             for i, (ids, x) in enumerate(zip(enc["input_ids"], xs))]
    return items, sum(len(f) > len(e) for f, e in zip(full, enc["input_ids"]))


def collate(items: Sequence[dict], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad to the batch's longest pair: ``input_ids``, ``attention_mask`` (``token_type_ids``)
    ``[B, T]`` long and ``labels`` ``[B]`` float (the scores)."""
    ids, mask = pad_right([x["input_ids"] for x in items], pad_id)
    out = {"input_ids": torch.from_numpy(ids),
           "attention_mask": torch.from_numpy(mask.astype(np.int64))}
    if items[0]["token_type_ids"] is not None:
        types, _ = pad_right([x["token_type_ids"] for x in items], 0)
        out["token_type_ids"] = torch.from_numpy(types)
    out["labels"] = torch.tensor(np.asarray([x["labels"] for x in items], dtype=np.float32))
    return out


def predict_scores(model, items: Sequence[dict], runtime: Runtime, pad_id: int,
                   batch_size: int = 64) -> np.ndarray:
    """The model's score ``[N]`` float32 for each encoded pair (batches sorted by length)."""
    out = np.zeros(len(items), dtype=np.float32)
    if not items:
        return out
    model.eval()
    model.to(runtime.device)

    def run(idx: np.ndarray) -> None:
        batch = collate([items[i] for i in idx], pad_id)
        batch.pop("labels")
        with runtime.autocast():
            logits = model(**runtime.to_device(batch)).logits  # [B, 1]
        out[idx] = logits[:, 0].float().cpu().numpy()

    run_batches(run, sorted_batches(np.asarray([len(x["input_ids"]) for x in items]),
                                    batch_size), runtime.device)
    return out


def build_regressor(model_name: str):
    """A fresh one-output regression head over the encoder at ``model_name``.

    Raises:
        BertkitError: the encoder cannot be loaded.
    """
    from transformers import AutoModelForSequenceClassification

    quiet_transformers()
    try:
        return AutoModelForSequenceClassification.from_pretrained(
            model_name, num_labels=1, problem_type="regression",
            attn_implementation=attention_implementation(model_name))
    except LOAD_ERRORS as exc:
        raise BertkitError(f"cannot load model '{model_name}' for sequence regression: "
                           f"{_short(exc)}", expected="a BERT-family encoder directory or hub id"
                           ) from None


def prediction_lines(xs: Sequence[PairExample], pred: np.ndarray) -> str:
    """JSON lines: each input object with ``line`` and ``predicted`` (the score, 6 decimals)."""
    return "".join(prediction_line(x.raw, x.line, round(float(p), 6), {})
                   for x, p in zip(xs, pred))


def _usage(results: dict) -> str:
    """The card's snippet: tokenizer and model by their Auto classes, the logit as the score."""
    return USAGE.replace("max_length=256", f"max_length={results.get('max_length', 256)}")


USAGE = '''import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("{path}")
model = AutoModelForSequenceClassification.from_pretrained("{path}"{remote}).eval()
batch = tokenizer(["Here, looking for agents that could kill KRAS mutant cells ..."],
                  ["GATA2 knockdown in KRAS mutant cells reduced active RHO ..."],
                  padding=True, truncation="longest_first", max_length=256,
                  return_tensors="pt")
with torch.no_grad():
    score = model(**batch).logits[:, 0]  # the predicted similarity, in the training scores' units'''

CARD = CardSpec(
    "finetune sim", "text-classification", "Sentence-pair similarity (regression)",
    "AutoModelForSequenceClassification",
    (Metric("pearson", "pearsonr", "Pearson r (BLURB's BIOSSES metric)", "Pearson",
            bounds=(-1.0, 1.0)),
     Metric("spearman", "spearmanr", "Spearman rho", "Spearman", bounds=(-1.0, 1.0)),
     Metric("mse", "mse", "mean squared error (score units squared)", "MSE", scale=1.0,
            bounds=(0.0, None))),
    _usage, notes=lambda results: [
        "A regression model (`num_labels=1`, `problem_type=\"regression\"` in its config): its "
        "one logit is the score; no softmax or sigmoid (a `text-classification` pipeline would "
        "apply one unless given `function_to_apply=\"none\"`)."])
"""The model card (:mod:`bertkit.modelcard`); its metrics are the task's headline metrics."""


class SimTask:
    """Sentence-pair similarity as a :class:`~bertkit.tasks.base.Task` (module docstring)."""

    name = "sim"
    config_class = SimConfig
    data_kind = "sim"
    extensions = EXTENSIONS
    unit = "pairs"
    select_metric = "pearson"
    card = CARD
    headline = CARD.metrics

    def load(self, cfg: SimConfig, splits: tuple[str, ...], console: Console | None = None
             ) -> TaskData:
        """Read ``splits`` of ``cfg.data`` (a directory or a registered name)."""
        out, sources, bad = load_sim_data(cfg.data, splits, _fields(cfg), cfg.skip_bad_lines)
        warn_bad_lines([b for v in bad.values() for b in v], console)
        return TaskData(out, sources, info={"skipped_bad_lines": {s: len(v)
                                                                  for s, v in bad.items()}})

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """Both texts of each training pair (of the first ``max_examples``), for TAPT."""
        train = load_sim_data(data, ("train",))[0]["train"][:max_examples]
        return [t for x in train for t in (x.text, x.text_pair)]

    def prepare(self, cfg: SimConfig, model_name: str, data: TaskData, runtime: Runtime,
                console: Console | None = None) -> TaskRun:
        """The regressor, encoded pairs and the dev/test/save steps.

        Raises:
            BertkitError: every training score the same (nothing to regress on).
        """
        train_x, dev_x, test_x = (data.splits[k] for k in ("train", "dev", "test"))
        if len({x.score for x in data.label_examples}) < 2:
            raise BertkitError("every training score is the same", file=data.sources["train"],
                               expected="pairs with at least two different scores")
        tokenizer = load_tokenizer(model_name)
        pad = tokenizer.pad_token_id
        model = build_regressor(model_name)
        items, cut = {}, {}
        for split, xs in (("train", train_x), ("dev", dev_x)):
            items[split], cut[split] = encode(xs, tokenizer, cfg.max_length)
        batches = GroupedBatches(items["train"], [len(x["input_ids"]) for x in items["train"]],
                                 cfg.batch_size, cfg.seed, lambda b: collate(b, pad), group=1)
        scores = np.asarray([x.score for x in train_x])
        summary = (f"data: {len(train_x)}/{len(dev_x)}/{len(test_x)} pairs (train/dev/test); "
                   f"training scores {scores.min():g}..{scores.max():g} (mean {scores.mean():.3f})"
                   f"; over {cfg.max_length} pieces, cut longest first: {cut['train']} train, "
                   f"{cut['dev']} dev; model {model_name}; device {runtime.device}, "
                   f"{runtime.precision}")

        def evaluate_dev(m) -> dict:
            pred = predict_scores(m, items["dev"], runtime, pad, cfg.eval_batch_size)
            return {**similarity_scores([x.score for x in dev_x], pred), "cut_pairs": cut["dev"]}

        def test(m, console: Console | None = None) -> ScoredSplit:
            items["test"], cut["test"] = encode(test_x, tokenizer, cfg.max_length)
            pred = predict_scores(m, items["test"], runtime, pad, cfg.eval_batch_size)
            metrics = similarity_scores([x.score for x in test_x], pred)
            metrics["cut_pairs"] = cut["test"]
            return ScoredSplit(metrics, lambda run_dir: write_text(
                Path(run_dir) / "test_predictions.jsonl", prediction_lines(test_x, pred)))

        def save(m, directory: Path) -> None:
            write_saved_model(m, tokenizer, directory, "sim", {
                "max_length": cfg.max_length, "text_column": cfg.text_column,
                "text_pair_column": cfg.text_pair_column, "score_column": cfg.score_column,
                "base_model": model_name, "data": cfg.data})

        return TaskRun(model, batches, evaluate_dev, test, save, summary=summary,
                        select_metric=cfg.metric,
                        results={"cut_pairs": cut, "loss": "mse", "max_length": cfg.max_length,
                                 "scoring": "scipy.stats: pearsonr, spearmanr; MSE in score units"})

    def report(self, results: dict, title: str) -> Table:
        """Pearson, Spearman (x100) and MSE, with the predict-the-mean baseline's MSE."""
        m = results["test"] if "test" in results else results
        table = Table(title=title)
        for col in ("Pearson r", "Spearman rho", "MSE", "MSE of the mean", "pairs"):
            table.add_column(col, justify="right")
        table.add_row(f"{100 * m['pearson']:.2f}", f"{100 * m['spearman']:.2f}",
                      f"{m['mse']:.4f}", f"{m['baseline_mse']:.4f}", str(m["support"]))
        return table

    @staticmethod
    def evaluate(*args, **kwargs):
        """:func:`evaluate_sim`."""
        return evaluate_sim(*args, **kwargs)

    @staticmethod
    def predict(*args, **kwargs):
        """:func:`predict_sim`."""
        return predict_sim(*args, **kwargs)

    @staticmethod
    def stream(model_dir: str, input_path: str, device: str = "auto", precision: str = "auto",
               batch_size: int = 64, console: Console | None = None):
        """``predict sim`` for :mod:`bertkit.streaming` (:mod:`bertkit.tasks.sim.stream`)."""
        from bertkit.tasks.sim.stream import sim_predictor

        return sim_predictor(model_dir, input_path, device, precision, batch_size, console,
                             _load, _saved_fields, encode, predict_scores, prediction_lines)


def _fields(cfg: SimConfig) -> Fields:
    return Fields(cfg.text_column, cfg.text_pair_column, cfg.score_column)


def _saved_fields(meta: dict) -> Fields:
    return Fields(meta.get("text_column", "text"), meta.get("text_pair_column", "text_pair"),
                  meta.get("score_column", "score"))


TASK = SimTask()


def finetune_sim(cfg: SimConfig, console: Console | None = None) -> dict:
    """Fine-tune, keep the best dev epoch (Pearson r), score test and write the run directory
    (through the shared driver, :func:`bertkit.tasks.driver.finetune`).

    Returns:
        the results dict also written to ``results.json``.

    Raises:
        BertkitError: bad data (before any training), model, settings or output directory.
    """
    return finetune(TASK, cfg, console)


def _load(model_dir: str):
    from transformers import AutoModelForSequenceClassification

    model, meta = read_saved_model(model_dir, "sim", "similarity",
                                   AutoModelForSequenceClassification)
    return model, load_tokenizer(meta["path"]), meta


def evaluate_sim(model_dir: str, data: str, split: str = "test", device: str = "auto",
                 precision: str = "auto", batch_size: int = 64, skip_bad_lines: bool = False,
                 max_eval_samples: int | None = None, console: Console | None = None
                 ) -> Evaluation:
    """Score a saved similarity model on one split of ``data`` (its first ``max_eval_samples``
    pairs; None: all): Pearson, Spearman, MSE.

    Raises:
        BertkitError: no saved sim model there, bad data, or an unknown split.
    """
    split = parse_split(split)
    model, tokenizer, meta = _load(model_dir)
    runtime = make_runtime(device, precision, console)
    out, _, bad = load_sim_data(data, (split,), _saved_fields(meta), skip_bad_lines)
    warn_bad_lines(bad[split], console)
    xs = out[split][:max_eval_samples]
    items, cut = encode(xs, tokenizer, int(meta.get("max_length", 256)))
    pred = predict_scores(model, items, runtime, tokenizer.pad_token_id, batch_size)
    metrics = similarity_scores([x.score for x in xs], pred)
    metrics["cut_pairs"] = cut
    return Evaluation(metrics, lambda: prediction_lines(xs, pred), xs, pred.tolist())


def predict_sim(model_dir: str, input_path: str, output: str | None = None,
                device: str = "auto", precision: str = "auto", batch_size: int = 64,
                skip_bad_lines: bool = False, console: Console | None = None) -> str:
    """Predict the score of each pair of a JSON-lines file (fields as saved with the model).

    Returns:
        JSON lines: each input object with ``line`` and ``predicted``; also written
        atomically to ``output`` when given.

    Raises:
        BertkitError: a bad input line (without ``skip_bad_lines``), no saved model.
    """
    model, tokenizer, meta = _load(model_dir)
    runtime = make_runtime(device, precision, console)
    xs, bad = read_pairs(input_path, _saved_fields(meta), labelled=False,
                         skip_bad_lines=skip_bad_lines)
    warn_bad_lines(bad, console)
    items, cut = encode(xs, tokenizer, int(meta.get("max_length", 256)))
    if console and cut:
        console.print(f"note: {cut} pair(s) over the model's {meta.get('max_length')} pieces, "
                      f"cut longest first", highlight=False)
    text = prediction_lines(xs, predict_scores(model, items, runtime, tokenizer.pad_token_id,
                                               batch_size))
    if output:
        write_text(output, text)
    return text
