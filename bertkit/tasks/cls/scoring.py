"""Running a classifier and turning its logits into labels, scores and prediction lines:
the parts of ``finetune cls``, ``evaluate cls`` and ``predict cls`` that work on arrays."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from bertkit.predict.inference import run_batches, sorted_batches
from bertkit.metrics.cls import best_thresholds, hoc_f1, label_scores, multilabel_scores
from bertkit.tasks.cls.config import CLSConfig
from bertkit.tasks.cls.data import TextExample
from bertkit.tasks.cls.encoding import Encoded, collate, pool_logits
from bertkit.tasks.cls.model import ClassifierLoss
from bertkit.tasks.common import prediction_line
from bertkit.training.devices import Runtime


def classify(model, items: Sequence[Encoded], n_examples: int, runtime: Runtime, pad_id: int,
             batch_size: int = 64, token_types: bool = True) -> np.ndarray:
    """Logits ``[n_examples, C]`` float32 per example (windows of one example averaged).

    Inputs are sorted by length so each batch is padded only to its own longest; on a
    multi-core CPU two batches run at once (:func:`bertkit.predict.inference.run_batches`).
    """
    inner = model.model if isinstance(model, ClassifierLoss) else model
    n_labels = inner.config.num_labels
    logits = np.zeros((len(items), n_labels), dtype=np.float32)
    if not items:
        return np.zeros((n_examples, n_labels), dtype=np.float32)
    inner.eval()
    inner.to(runtime.device)

    def predict(idx: np.ndarray) -> None:
        batch = collate([items[i] for i in idx], pad_id, token_types)
        batch.pop("labels")
        batch = runtime.to_device(batch)
        with runtime.autocast():
            out = inner(**batch).logits
        logits[idx] = out.float().cpu().numpy()

    lengths = np.asarray([len(x.input_ids) for x in items])
    run_batches(predict, sorted_batches(lengths, batch_size), runtime.device)
    example = np.asarray([x.example for x in items])
    if len(items) == n_examples and (example == np.arange(n_examples)).all():
        return logits
    return pool_logits(logits, example, n_examples)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def decide(logits: np.ndarray, labels: list[str], thresholds: np.ndarray | None = None):
    """Predicted labels from logits ``[N, C]``: argmax (single-label) or, with ``thresholds``
    ``[C]``, every label whose sigmoid probability reaches its threshold (multi-label).

    Returns:
        (predictions: one label or one label list per example, probabilities ``[N, C]``).
    """
    if thresholds is None:
        probs = _softmax(logits)
        return [labels[k] for k in probs.argmax(axis=1)], probs
    probs = _sigmoid(logits)
    keep = probs >= thresholds[None, :]
    return [[labels[c] for c in np.flatnonzero(row)] for row in keep], probs


def score(gold: list, pred: list, labels: list[str], multi_label: bool,
          ids: list[str] | None = None) -> dict:
    """:func:`~bertkit.metrics.cls.label_scores` or :func:`~bertkit.metrics.cls.multilabel_scores`
    (both with the majority-class baseline); multi-label scores add BLURB's HoC figures
    (:func:`~bertkit.metrics.cls.hoc_f1`, rows grouped into documents by ``ids``)."""
    if multi_label:
        gold = [g or [] for g in gold]
        return {**multilabel_scores(gold, pred, labels), **hoc_f1(gold, pred, ids, labels)}
    return label_scores(gold, pred, labels)


def example_ids(xs: Sequence[TextExample]) -> list[str] | None:
    """The examples' ``id`` fields (BLURB's document keys), or None when any lacks one."""
    ids = [x.raw.get("id") for x in xs]
    return [str(i) for i in ids] if all(i is not None for i in ids) else None


def prediction_lines(examples: Sequence[TextExample], labels: list[str], pred: list,
                     probs: np.ndarray, multi_label: bool) -> str:
    """JSON lines: each input object with ``line``, ``predicted`` and ``probability`` (the
    predicted label's softmax probability) or, multi-label, ``probabilities`` per label; an
    example flagged ``empty`` (its ``pred`` None) gets ``"predicted": null, "empty": true``."""
    return "".join(prediction_line(ex.raw, ex.line, None, {"empty": True}) if ex.empty else
                   prediction_line(
        ex.raw, ex.line, p,
        {"probabilities": {lab: round(float(v), 6) for lab, v in zip(labels, pr)}}
        if multi_label else {"probability": round(float(pr.max()), 6)})
        for ex, p, pr in zip(examples, pred, probs))


def _spread(examples: Sequence[TextExample], values, fill) -> list:
    """``values`` (one per example not flagged ``empty``, in order) laid out over ``examples``,
    ``fill`` at the empty ones."""
    it = iter(values)
    return [fill if ex.empty else next(it) for ex in examples]


class RunScorer:
    """One run's scoring of its encoded splits: logits, decisions (multi-label: thresholds per
    label, each the best F1 on dev) and metrics.

    Args:
        items: ``{split: encoded inputs}`` (``test`` added when the test step encodes it).
        dev: the dev examples the thresholds are chosen on.
    """

    def __init__(self, cfg: CLSConfig, items: dict, labels: list[str], runtime: Runtime,
                 pad: int, token_types: bool, dev: list) -> None:
        self.cfg, self.items, self.labels, self.runtime = cfg, items, labels, runtime
        self.pad, self.token_types, self.dev = pad, token_types, dev
        self.label2id = {lab: i for i, lab in enumerate(labels)}
        self.thresholds: list[float] | None = None

    def logits(self, m, split: str, xs: list) -> np.ndarray:
        """``[N, C]`` logits of ``split``'s examples (windows of a long text averaged)."""
        return classify(m, self.items[split], len(xs), self.runtime, self.pad,
                        self.cfg.eval_batch_size, self.token_types)

    def scored(self, m, split: str, xs: list, thresholds=None) -> tuple[dict, list, np.ndarray]:
        """``(metrics, predicted labels, probabilities)``; multi-label without ``thresholds``
        (dev): thresholds chosen on the split itself."""
        logits = self.logits(m, split, xs)
        multi = self.cfg.multi_label
        if multi and thresholds is None:  # dev: thresholds chosen on itself
            thresholds = best_thresholds(_sigmoid(logits), indicators(xs, self.label2id))
        pred, probs = decide(logits, self.labels, thresholds if multi else None)
        metrics = score([x.label for x in xs], pred, self.labels, multi, example_ids(xs))
        return metrics, pred, probs

    def choose_thresholds(self, m) -> dict | None:
        """Multi-label: one decision threshold per label, the best F1 on dev for the final
        model (step 2 of :class:`TaskRun`, before the timed test)."""
        if not self.cfg.multi_label:
            return None
        logits = self.logits(m, "dev", self.dev)
        self.thresholds = best_thresholds(_sigmoid(logits),
                                          indicators(self.dev, self.label2id)).tolist()
        return {"thresholds": self.thresholds}

    def thresholds_of(self, m) -> list[float] | None:
        """The chosen thresholds (chosen now when called outside the driver); None:
        single-label."""
        if self.cfg.multi_label and self.thresholds is None:  # called outside the driver
            self.choose_thresholds(m)
        return self.thresholds


def indicators(xs: Sequence[TextExample], label2id: dict[str, int]) -> np.ndarray:
    """``[N, C]`` 0/1 gold label indicators of multi-label examples."""
    out = np.zeros((len(xs), len(label2id)), dtype=np.int64)
    for i, ex in enumerate(xs):
        for lab in ex.label or []:
            if lab in label2id:
                out[i, label2id[lab]] = 1
    return out
