"""``finetune sim``, ``evaluate sim`` and ``predict sim``: sentence-pair similarity as a
regression, a :class:`~bertkit.tasks.base.Task` run by the shared driver.

BERT's STS-B setup (Devlin et al., 2019, §4.1; Hugging Face's ``run_glue.py`` with
``num_labels=1``): ``[CLS] text [SEP] pair [SEP]``, the pooled ``[CLS]`` vector into a linear layer
with one output, mean squared error against the gold score (raw units, BIOSSES 0-4). BLURB scores
BIOSSES by Pearson r (Gu et al., 2021), so the best dev epoch is chosen by it; Spearman rho and the
MSE are reported beside it (:mod:`bertkit.metrics.sim`). The saved model is a plain
``AutoModelForSequenceClassification`` (``num_labels=1``, ``problem_type="regression"``): its
single logit is the score, no bertkit needed.

``--architecture bi-encoder`` trains a Sentence-BERT bi-encoder instead
(:mod:`bertkit.tasks.sim.biencoder`: each text pooled alone, the cosine as the score) through the
same driver and loop; its saved folder is a sentence-transformers one. Every run also scores the
encoder as given, no training (the zero-shot row: cosine of the pooled embeddings), and keeps it
beside its own scores (``zero_shot`` in ``results.json``; ``zero_shot_pearson`` and
``zero_shot_spearman`` in ``test``).

BIOSSES has 64 training pairs and 20 test pairs: one test pair moves Pearson by several points,
so compare seeds (BLURB averages 10), never single runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from rich.console import Console
from rich.table import Table

from bertkit.inputs.batching import GroupedBatches
from bertkit.encoders import load_tokenizer
from bertkit.errors import BertkitError
from bertkit.io import write_text
from bertkit.metrics.sim import similarity_scores
from bertkit.outputs.modelcard import CardSpec, Metric
from bertkit.tasks.base import (TaskHeader, Evaluation, ScoredSplit, TaskData, TaskRun,
                                report_metrics, task_functions)
from bertkit.tasks.common import (find_saved_model, load_pretrained, parse_split,
                                  prediction_line, warn_bad_lines, write_saved_model)
from bertkit.tasks.driver import finetune
from bertkit.tasks.sim import biencoder as bi
from bertkit.tasks.sim.config import SimConfig
from bertkit.tasks.sim.regressor import build_regressor, collate, encode, predict_scores
from bertkit.tasks.sim.data import (EXTENSIONS, Fields, PairExample, check_scales,
                                    declared_range, load_sim_data, read_pairs, score_range)
from bertkit.tasks.sim.suite import SUITE
from bertkit.training.devices import Runtime, make_runtime


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

METRICS = (Metric("pearson", "pearsonr", "Pearson r (BLURB's BIOSSES metric)", "Pearson",
                  bounds=(-1.0, 1.0)),
           Metric("spearman", "spearmanr", "Spearman rho", "Spearman", bounds=(-1.0, 1.0)),
           Metric("mse", "mse", "mean squared error (score units squared)", "MSE", scale=1.0,
                  bounds=(0.0, None)))
BI_CARD = CardSpec(
    "finetune sim", "sentence-similarity", "Sentence similarity (bi-encoder)",
    "AutoModel", METRICS, bi.usage,
    notes=lambda results: [
        f"A Sentence-BERT bi-encoder ({results.get('pooling', 'mean')} pooling, trained on the "
        f"{results.get('objective', 'cosine')} objective): each text is embedded alone and the "
        "cosine of the two embeddings is the similarity; `predicted` in bertkit's outputs maps "
        "it onto the training scores' range."])
CARD = CardSpec(
    "finetune sim", "text-classification", "Sentence-pair similarity (regression)",
    "AutoModelForSequenceClassification", METRICS,
    _usage, notes=lambda results: [
        "A regression model (`num_labels=1`, `problem_type=\"regression\"` in its config): its "
        "one logit is the score; no softmax or sigmoid (a `text-classification` pipeline would "
        "apply one unless given `function_to_apply=\"none\"`)."],
    variant=lambda results: BI_CARD if results.get("architecture") == "bi-encoder" else None)
"""The model card (:mod:`bertkit.outputs.modelcard`); its metrics are the task's headline metrics; a
bi-encoder's run gets :data:`BI_CARD`."""


class SimTask(TaskHeader, name="sim", config_class=SimConfig,
              extensions=EXTENSIONS, unit="pairs", select_metric="pearson",
              card=CARD, suite=SUITE):
    """Sentence-pair similarity as a :class:`~bertkit.tasks.base.Task` (module docstring)."""

    def load(self, cfg: SimConfig, splits: tuple[str, ...], console: Console | None = None
             ) -> TaskData:
        """Read ``splits`` of ``cfg.data`` (a directory or a registered name)."""
        out, sources, bad = load_sim_data(cfg.data, splits, _fields(cfg), cfg.skip_bad_lines)
        warn_bad_lines([b for v in bad.values() for b in v], console)
        check_scales(out, sources)  # train 0-1 beside dev 0-5: refused, both ranges named
        return TaskData(out, sources, info={"skipped_bad_lines": {s: len(v)
                                                                  for s, v in bad.items()}})

    def text_lines(self, data: str, max_examples: int | None = None) -> list[str]:
        """Both texts of each training pair (of the first ``max_examples``), for TAPT."""
        train = load_sim_data(data, ("train",))[0]["train"][:max_examples]
        return [t for x in train for t in (x.text, x.text_pair)]

    def prepare(self, cfg: SimConfig, model_name: str, data: TaskData, runtime: Runtime,
                console: Console | None = None) -> TaskRun:
        """The model (a regressor; with ``--architecture bi-encoder`` a bi-encoder,
        :mod:`bertkit.tasks.sim.biencoder`), encoded pairs, the zero-shot row of the encoder as
        given (dev and test) and the dev/test/save steps.

        Raises:
            BertkitError: every training score the same (nothing to learn from).
        """
        train_x, dev_x, test_x = (data.splits[k] for k in ("train", "dev", "test"))
        scores = np.asarray([x.score for x in data.label_examples])
        if np.ptp(scores) == 0:
            raise BertkitError(f"every training score is the same ({scores[0]:g}, "
                               f"{len(scores)} pairs): nothing to learn a similarity from",
                               file=data.sources["train"],
                               expected="pairs with at least two different scores")
        low, high = declared_range(cfg.data) or score_range(data.label_examples)
        tokenizer = load_tokenizer(model_name)
        pad = tokenizer.pad_token_id
        biencoder = cfg.architecture == "bi-encoder"
        encoder = bi.load_bi_encoder(model_name, cfg.max_length) if biencoder else None
        zero = bi.zero_shot_scores(model_name, {"dev": dev_x, "test": test_x}, tokenizer,
                                   cfg.max_length, runtime, low, high, cfg.eval_batch_size,
                                   encoder)
        model, encode_fn, collate_fn, score_fn, length = _architecture(
            cfg, model_name, encoder, pad, low, high, runtime)
        items, cut = {}, {}
        for split, xs in (("train", train_x), ("dev", dev_x)):
            items[split], cut[split] = encode_fn(xs, tokenizer, cfg.max_length)
        batches = GroupedBatches(items["train"], [length(x) for x in items["train"]],
                                 cfg.batch_size, cfg.seed, collate_fn, group=1)
        what = (f"bi-encoder, {bi.pooling_of(encoder)} pooling, objective {cfg.objective}"
                if biencoder else "cross-encoder, [CLS] regression head")
        unit = "texts" if biencoder else "pairs"
        summary = (f"data: {len(train_x)}/{len(dev_x)}/{len(test_x)} pairs (train/dev/test); "
                   f"training scores {scores.min():g}..{scores.max():g} (mean {scores.mean():.3f})"
                   f", scale {low:g}-{high:g}; {unit} over {cfg.max_length} pieces, cut: "
                   f"{cut['train']} train, {cut['dev']} dev; model {model_name} ({what}); "
                   f"zero-shot (cosine, no training) Pearson dev {_points(zero['dev'])}, test "
                   f"{_points(zero['test'])}; device {runtime.device}, {runtime.precision}")

        def evaluate_dev(m) -> dict:
            pred = score_fn(m, items["dev"])
            return {**similarity_scores([x.score for x in dev_x], pred), "cut_pairs": cut["dev"]}

        def test(m, console: Console | None = None) -> ScoredSplit:
            items["test"], cut["test"] = encode_fn(test_x, tokenizer, cfg.max_length)
            pred = score_fn(m, items["test"])
            metrics = similarity_scores([x.score for x in test_x], pred)
            metrics.update(cut_pairs=cut["test"], zero_shot_pearson=zero["test"]["pearson"],
                           zero_shot_spearman=zero["test"]["spearman"])
            return ScoredSplit(metrics, lambda run_dir: write_text(
                Path(run_dir) / "test_predictions.jsonl", prediction_lines(test_x, pred)))

        how = {"architecture": cfg.architecture, "score_range": [low, high],
               **({"objective": cfg.objective, "pooling": bi.pooling_of(encoder)}
                  if biencoder else {})}

        def save(m, directory: Path) -> None:
            write_saved_model(m.encoder if biencoder else m, tokenizer, directory, "sim", {
                "max_length": cfg.max_length, "text_column": cfg.text_column,
                "text_pair_column": cfg.text_pair_column, "score_column": cfg.score_column,
                "base_model": model_name, "data": cfg.data, **how})

        loss = ({"cosine": "CosineSimilarityLoss: MSE of the cosine against the gold scaled to "
                           "[0, 1]", "cosent": "CoSENTLoss (scale 20)"}[cfg.objective]
                if biencoder else "mse")
        return TaskRun(model, batches, evaluate_dev, test, save, summary=summary,
                       select_metric=cfg.metric,
                       results={"cut_pairs": cut, "loss": loss, "max_length": cfg.max_length,
                                "zero_shot": zero, **how,
                                "scoring": "scipy.stats: pearsonr, spearmanr; MSE in score "
                                           "units"})

    def report(self, results: dict, title: str) -> Table:
        """Pearson, Spearman (x100) and MSE, with the predict-the-mean baseline's MSE; a
        fine-tuning run's table has the zero-shot row (the encoder as given) under its own.
        An undefined correlation (every gold score the same) shows as "undefined" with why."""
        m = report_metrics(results)
        table = Table(title=title)
        for col in ("model", "Pearson r", "Spearman rho", "MSE", "MSE of the mean", "pairs"):
            table.add_column(col, justify="right")
        rows = [("zero-shot" if m.get("zero_shot") is True else
                 results.get("architecture", "model"), m)]
        zero = (results.get("zero_shot") or {}).get("test") if "test" in results else None
        if isinstance(zero, dict):
            rows.append(("zero-shot (cosine, no training)", zero))
        for name, row in rows:
            table.add_row(name, _points(row), _points(row, "spearman"), f"{row['mse']:.4f}",
                          f"{row['baseline_mse']:.4f}", str(row["support"]))
        why = [row["undefined"] for _, row in rows if row.get("undefined")]
        if why:
            table.caption = f"undefined: {why[0]}"
        return table

    evaluate, predict, stream = task_functions("sim")


def stream_sim(model_dir: str, input_path: str, device: str = "auto", precision: str = "auto",
               batch_size: int = 64, console: Console | None = None):
    """``predict sim`` for :mod:`bertkit.predict` (:mod:`bertkit.tasks.sim.stream`)."""
    from bertkit.tasks.sim.stream import sim_predictor

    return sim_predictor(model_dir, input_path, device, precision, batch_size, console,
                         _load, _saved_fields, pair_scorer, prediction_lines,
                         _single_text_hint)


def _architecture(cfg: SimConfig, model_name: str, encoder, pad: int, low: float, high: float,
                  runtime: Runtime) -> tuple:
    """What differs between the two architectures: ``(model, encode, collate, score, length)``
    for a cross-encoder regressor (``[CLS]`` regression head, BERT §4.1 STS-B) or a bi-encoder
    (Sentence-BERT, Reimers & Gurevych 2019: cosine of pooled sides, scaled to ``low..high``).
    """
    if cfg.architecture == "bi-encoder":
        model, encode_fn = bi.BiEncoder(encoder, cfg.objective), bi.encode_sides

        def collate_fn(b):
            return bi.collate_sides(b, pad, low, high)

        def score_fn(m, items):
            return bi.to_scores(bi.cosines(m.encoder, items, runtime, pad,
                                           cfg.eval_batch_size), low, high)

        def length(x):
            return max(len(x["a"]), len(x["b"]))
    else:
        model, encode_fn = build_regressor(model_name), encode

        def collate_fn(b):
            return collate(b, pad)

        def score_fn(m, items):
            return predict_scores(m, items, runtime, pad, cfg.eval_batch_size)

        def length(x):
            return len(x["input_ids"])
    return model, encode_fn, collate_fn, score_fn, length


def _points(metrics: dict, key: str = "pearson") -> str:
    """A correlation in points (x100, two decimals), or "undefined" where it is None."""
    value = metrics.get(key)
    return "undefined" if value is None else f"{100 * value:.2f}"


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
    """(model, tokenizer, meta) of a saved similarity model: a regressor
    (``AutoModelForSequenceClassification``) or, for ``architecture: bi-encoder`` in its meta,
    a ``SentenceTransformer``.

    Raises:
        BertkitError: no saved sim model there, or its files cannot be loaded.
    """
    from transformers import AutoModelForSequenceClassification

    path, meta = find_saved_model(model_dir, "sim", "similarity")
    if meta.get("architecture") == "bi-encoder":
        model = bi.load_bi_encoder(str(path), int(meta.get("max_length", 256)))
    else:
        model = load_pretrained(AutoModelForSequenceClassification.from_pretrained, path)
    model.eval()
    return model, load_tokenizer(meta["path"]), meta


def pair_scorer(model, tokenizer, meta: dict, runtime: Runtime, batch_size: int = 64
                ) -> Callable[[Sequence[PairExample]], tuple[np.ndarray, int]]:
    """``score(pairs) -> (scores [N] float32, texts or pairs cut)`` for a model from
    :func:`_load` (or, with ``meta["architecture"] == "bi-encoder"``, any
    ``SentenceTransformer``): the regressor's logit, or the bi-encoder's cosine mapped onto
    ``meta["score_range"]`` (:func:`bertkit.tasks.sim.biencoder.to_scores`)."""
    max_length, pad = int(meta.get("max_length", 256)), tokenizer.pad_token_id
    if meta.get("architecture") == "bi-encoder":
        low, high = meta.get("score_range") or (0.0, 1.0)

        def score(xs):
            items, cut = bi.encode_sides(xs, tokenizer, max_length)
            return bi.to_scores(bi.cosines(model, items, runtime, pad, batch_size), low,
                                high), cut
    else:
        def score(xs):
            items, cut = encode(xs, tokenizer, max_length)
            return predict_scores(model, items, runtime, pad, batch_size), cut
    return score


def _zero_shot(model: str, data: str, split: str, console: Console | None):
    """(encoder, tokenizer, meta) of ``evaluate sim --zero-shot``: the encoder ``model`` as a
    bi-encoder (its own pooling, else mean), no training; its score range the set's declared
    one, else the scored split's (Pearson and Spearman do not depend on it)."""
    from bertkit.encoders import default_model, resolve_model_source

    name = resolve_model_source(default_model() if model in PACKAGED_NAMES else model)
    encoder = bi.load_bi_encoder(name, ZERO_SHOT_LENGTH)
    out = load_sim_data(data, (split,))[0][split]
    meta = {"architecture": "bi-encoder", "max_length": ZERO_SHOT_LENGTH, "path": name,
            "score_range": list(declared_range(data) or score_range(out)),
            "pooling": bi.pooling_of(encoder)}
    if console is not None:
        console.print(f"zero-shot: {name}, {meta['pooling']} pooling, cosine of the two "
                      f"embeddings, no training", highlight=False, markup=False)
    return encoder, load_tokenizer(name), meta


PACKAGED_NAMES = ("minilm", "packaged")  # --zero-shot --model minilm: the packaged encoder
ZERO_SHOT_LENGTH = 256  # pieces per text of evaluate sim --zero-shot (all-MiniLM-L6-v2's own)


def evaluate_sim(model_dir: str, data: str, split: str = "test", device: str = "auto",
                 precision: str = "auto", batch_size: int = 64, skip_bad_lines: bool = False,
                 max_eval_samples: int | None = None, console: Console | None = None,
                 zero_shot: bool = False) -> Evaluation:
    """Score a saved similarity model on one split of ``data`` (its first ``max_eval_samples``
    pairs; None: all): Pearson, Spearman, MSE. With ``zero_shot``, ``model_dir`` names an
    encoder (directory, hub id, or ``minilm``: the packaged one) scored as given: the cosine of
    its pooled embeddings, no training (MTEB's STS protocol).

    Raises:
        BertkitError: no saved sim model (or encoder) there, bad data, or an unknown split.
    """
    split = parse_split(split)
    model, tokenizer, meta = (_zero_shot(model_dir, data, split, console) if zero_shot
                              else _load(model_dir))
    runtime = make_runtime(device, precision, console)
    out, _, bad = load_sim_data(data, (split,), _saved_fields(meta), skip_bad_lines)
    warn_bad_lines(bad[split], console)
    xs = out[split][:max_eval_samples]
    pred, cut = pair_scorer(model, tokenizer, meta, runtime, batch_size)(xs)
    metrics = similarity_scores([x.score for x in xs], pred)
    metrics["cut_pairs"] = cut
    if zero_shot:
        metrics.update(zero_shot=True, pooling=meta["pooling"], model=meta["path"])
    return Evaluation(metrics, lambda: prediction_lines(xs, pred), xs, pred.tolist())


def predict_sim(model_dir: str, input_path: str, output: str | None = None,
                device: str = "auto", precision: str = "auto", batch_size: int = 64,
                skip_bad_lines: bool = False, console: Console | None = None) -> str:
    """Predict the score of each pair of a JSON-lines file (fields as saved with the model).

    Returns:
        JSON lines: each input object with ``line`` and ``predicted``; also written
        atomically to ``output`` when given.

    Raises:
        BertkitError: a bad input line (without ``skip_bad_lines``; a record with one text
            only is one, for a bi-encoder too), no saved model.
    """
    model, tokenizer, meta = _load(model_dir)
    runtime = make_runtime(device, precision, console)
    xs, bad = read_pairs(input_path, _saved_fields(meta), labelled=False,
                         skip_bad_lines=skip_bad_lines, hint=_single_text_hint(meta))
    warn_bad_lines(bad, console)
    pred, cut = pair_scorer(model, tokenizer, meta, runtime, batch_size)(xs)
    if console and cut:
        texts = meta.get("architecture") == "bi-encoder"
        console.print(f"note: {cut} {'text(s)' if texts else 'pair(s)'} over the model's "
                      f"{meta.get('max_length')} pieces, cut{'' if texts else ' longest first'}",
                      highlight=False)
    text = prediction_lines(xs, pred)
    if output:
        write_text(output, text)
    return text


def _single_text_hint(meta: dict) -> str:
    """What to say to a bi-encoder's user who gave single texts: its embeddings come from
    sentence-transformers, not ``predict sim``."""
    if meta.get("architecture") != "bi-encoder":
        return ""
    return (f"; predict sim scores pairs: a single text's embedding comes from "
            f"SentenceTransformer(\"{meta.get('path')}\").encode([text])")

