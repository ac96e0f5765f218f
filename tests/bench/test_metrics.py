"""Per-item statistics give back the tasks' own scores, so the bootstrap resamples the right
metric."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from bertkit.bench.declarations import METRICS
from bertkit.metrics.cls import label_scores
from bertkit.metrics.ner import entity_scores, token_scores
from bertkit.metrics.re import relation_scores
from bertkit.tasks.ner.suite import strict_spans


def _random_tags(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(["O", "O", "B-A", "I-A", "B-B", "I-B"]) for _ in range(n)]


def _write_conll(path, sentences):
    lines = []
    for gold, pred in sentences:
        lines += [f"w{i}\t{g}\t{p}" for i, (g, p) in enumerate(zip(gold, pred))] + [""]
    path.write_text("\n".join(lines), encoding="utf-8")


@pytest.fixture
def ner_run(tmp_path):
    rng = random.Random(7)
    sentences = []
    for _ in range(60):
        gold = _random_tags(rng, rng.randint(3, 9))
        pred = [g if rng.random() < 0.7 else _random_tags(rng, 1)[0] for g in gold]
        sentences.append((gold, pred))
    _write_conll(tmp_path / "test_predictions.conll", sentences)
    return tmp_path, sentences


def test_strict_spans_count_as_seqeval_strict(ner_run):
    _, sentences = ner_run
    from seqeval.metrics.sequence_labeling import get_entities  # noqa: F401  (seqeval present)

    stats = METRICS["entity_f1"].stats(ner_run[0], {})
    score = float(METRICS["entity_f1"].score(stats.sum(axis=0)))
    expected = entity_scores([g for g, _ in sentences], [p for _, p in sentences])["f1"]
    assert stats.shape == (60, 3)
    assert score == pytest.approx(expected)
    assert sorted(strict_spans(["I-A", "I-A", "B-A", "I-B"])) == [("A", 2, 3)]


def test_token_macro_f1_as_the_ner_task_scores_it(ner_run):
    run, sentences = ner_run
    stats = METRICS["token_macro_f1"].stats(run, {})
    expected = token_scores([g for g, _ in sentences], [p for _, p in sentences])
    assert float(METRICS["token_macro_f1"].score(stats.sum(axis=0))) == \
        pytest.approx(expected["token_macro_f1"])


def _write_jsonl(path, pairs):
    path.write_text("\n".join(json.dumps({"text": "t", "label": g, "predicted": p})
                              for g, p in pairs), encoding="utf-8")


def test_relation_micro_and_macro_f1_without_the_negative_class(tmp_path):
    rng = random.Random(3)
    labels = ["false", "false", "false", "mechanism", "effect", "advise", "int"]
    pairs = [(rng.choice(labels), rng.choice(labels)) for _ in range(300)]
    _write_jsonl(tmp_path / "test_predictions.jsonl", pairs)
    expected = relation_scores([g for g, _ in pairs], [p for _, p in pairs], "false")
    results = {"negative_label": "false"}
    for name in ("micro_f1", "macro_f1"):
        stats = METRICS[name].stats(tmp_path, results)
        assert float(METRICS[name].score(stats.sum(axis=0))) == pytest.approx(expected[name])
    acc = METRICS["accuracy"].stats(tmp_path, results)
    assert float(METRICS["accuracy"].score(acc.sum(axis=0))) == \
        pytest.approx(expected["accuracy"])


def test_classification_macro_f1(tmp_path):
    rng = random.Random(5)
    pairs = [(rng.choice("abc"), rng.choice("abcc")) for _ in range(200)]
    _write_jsonl(tmp_path / "test_predictions.jsonl", pairs)
    stats = METRICS["macro_f1"].stats(tmp_path, {})
    expected = label_scores([g for g, _ in pairs], [p for _, p in pairs])["macro_f1"]
    assert float(METRICS["macro_f1"].score(stats.sum(axis=0))) == pytest.approx(expected)


def test_pearson_from_summed_moments(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 4, 40)
    y = x + rng.normal(0, 1, 40)
    (tmp_path / "test_predictions.jsonl").write_text(
        "\n".join(json.dumps({"score": float(a), "predicted": float(b)}) for a, b in zip(x, y)),
        encoding="utf-8")
    stats = METRICS["pearson"].stats(tmp_path, {})
    assert float(METRICS["pearson"].score(stats.sum(axis=0))) == \
        pytest.approx(np.corrcoef(x, y)[0, 1])


def test_hoc_from_per_abstract_indicator_counts(tmp_path):
    rows = [(["a", "b"], ["a"]), ([], ["c"]), (["c"], None), (["a"], ["a", "b"])]
    (tmp_path / "test_predictions.jsonl").write_text(
        "\n".join(json.dumps({"label": g, "predicted": p}) for g, p in rows), encoding="utf-8")
    stats = METRICS["hoc_f1"].stats(tmp_path, {})
    assert stats.tolist() == [[1, 0, 1], [0, 1, 0], [0, 0, 1], [1, 1, 0]]
    # TP 2, predicted 4, gold 4: P = R = 0.5, F1 = 2PR / (P + R) = 0.5
    assert float(METRICS["hoc_f1"].score(stats.sum(axis=0))) == pytest.approx(0.5)


def test_coref_statistics_per_document_give_back_the_conll_f1(tmp_path, monkeypatch):
    """Coreference's paired bootstrap resamples test documents: the per-document MUC, B-cubed
    and CEAF-e counts, summed, score as the task's own CoNLL F1 (points), singletons kept."""
    from bertkit.data.conll2012 import CorefDocument, format_conll2012
    from bertkit.metrics.coref import coref_scores

    rng = random.Random(3)

    def clusters(n):
        spans = rng.sample([(i, i + rng.randint(0, 1)) for i in range(0, n - 1, 2)], n // 3)
        out = [[]]
        for span in spans:
            if out[-1] and rng.random() < 0.4:
                out.append([])
            out[-1].append(span)
        return [sorted(c) for c in out if c]

    docs, gold, pred = [], [], []
    for d in range(6):
        n = rng.randint(12, 30)
        doc = CorefDocument(f"doc{d}; part 0", [[f"w{i}" for i in range(n)]])
        docs.append(doc)
        gold.append(clusters(n))
        pred.append(clusters(n) if d else gold[-1])
    folder = tmp_path / "coref" / "toy" / "test"
    folder.mkdir(parents=True)
    for doc, g in zip(docs, gold):
        (folder / f"{doc.name.split(';')[0]}.conll").write_text(format_conll2012([doc], [g]))
    run = tmp_path / "run"
    run.mkdir()
    (run / "test_predictions.conll").write_text(format_conll2012(docs, pred))
    results = {"data": str(tmp_path / "coref" / "toy")}
    spec = METRICS["conll_f1"]
    stats = spec.stats(run, results)
    assert stats.shape == (6, 12)
    assert float(spec.score(stats.sum(axis=0))) == \
        pytest.approx(coref_scores(gold, pred)["conll_f1"], abs=1e-9)
    assert float(spec.score(stats[:1].sum(axis=0))) == pytest.approx(100.0)  # doc0 is perfect
    monkeypatch.delenv("BERTKIT_DATA", raising=False)
    assert spec.stats(run, {"data": "litbank"}) is None  # gold not readable here: no bootstrap
