"""Issue 46: one score scale. Every consumer reads the task's ``Metric.scale``
(:func:`bertkit.tasks.base.score_scale`); nothing is decided from the values, so a QA seed set
whose F1 lies under 1 point is neither shown x100 nor clipped to [0, 1]."""

from __future__ import annotations

import pytest
from rich.console import Console

from bertkit.outputs.tables import seed_table
from bertkit.tasks.base import score_scale
from bertkit.tasks.driver import seed_statistics
from bertkit.tasks.registry import get_task

QA_SEEDS = [{"f1": 0.4, "exact": 0.0, "total": 150, "best_f1_thresh": -1.5},
            {"f1": 0.9, "exact": 0.5, "total": 150, "best_f1_thresh": -0.5}]  # points, all < 1


def test_a_tasks_scores_share_its_headline_scale():
    qa, ner = get_task("qa"), get_task("ner")
    assert score_scale(qa, "f1") == score_scale(qa, "HasAns_exact") == 1.0
    assert score_scale(qa, "f1_at_dev_thresh") == 1.0  # a score at a threshold
    assert score_scale(qa, "HasAns_total") is None and score_scale(qa, "best_f1_thresh") is None
    assert score_scale(ner, "f1") == score_scale(ner, "macro_f1") == 100.0
    assert score_scale(ner, "loss") is None and score_scale(ner, "train_seconds") is None


def test_a_qa_seed_set_under_one_point_is_not_shown_x100_nor_clipped_to_0_1():
    qa = get_task("qa")
    stats = seed_statistics(QA_SEEDS, lambda key: score_scale(qa, key))
    f1 = stats["f1"]
    assert f1["scale"] == 1.0 and f1["mean"] == pytest.approx(0.65)
    assert f1["ci95_high"] > 1.0  # 0.65 + 12.71 * 0.354 / 1.414: points, not a fraction
    assert f1["ci95_low"] == 0.0  # clipped at 0, the bottom of [0, 100]
    assert stats["total"]["scale"] is None and stats["best_f1_thresh"]["ci95_low"] < -1.0
    summary = {"seeds": [1, 2], "select_metric": "f1", "metrics": {"test": stats}}
    console = Console(width=200, record=True)
    console.print(seed_table(summary, "qa", ("f1", "exact")))
    row = next(line for line in console.export_text().splitlines() if " f1 " in f" {line} ")
    assert "0.65" in row and "65.00" not in row and "0.40 0.90" in row


def test_a_fraction_task_is_shown_in_points_and_clipped_to_its_range():
    ner = get_task("ner")
    stats = seed_statistics([{"f1": 0.99, "loss": 0.9}, {"f1": 0.90, "loss": 0.2}],
                            lambda key: score_scale(ner, key))
    assert stats["f1"]["ci95_high"] == 1.0 and stats["f1"]["scale"] == 100.0
    assert stats["loss"]["ci95_low"] < 0.0 and stats["loss"]["scale"] is None
    console = Console(width=200, record=True)
    console.print(seed_table({"seeds": [1, 2], "metrics": {"dev": stats}}, "ner", ("f1",)))
    text = console.export_text()
    assert "94.50" in text and "99.00 90.00" in text and "0.90 0.20" in text


def test_the_training_loop_shows_qa_dev_scores_in_points():
    from bertkit.tasks.driver import score_scale as driver_scale  # the one the driver passes

    assert driver_scale(get_task("qa"), get_task("qa").select_metric) == 1.0


def test_a_correlation_seed_interval_may_go_below_zero_and_sim_counts_are_not_x100():
    """Helper trial: ``finetune sim --seeds`` clipped Pearson's interval to [0, 1] and showed
    ``baseline_mse`` and ``cut_pairs`` x100. A correlation's range is [-1, 1]; an error and a
    count are no scores."""
    from bertkit.tasks.base import score_bounds
    from bertkit.workflows.scores import score_summary, task_metrics

    sim = get_task("sim")
    seeds = [{"pearson": -0.06, "spearman": -0.14, "mse": 1.78, "baseline_mse": 1.55,
              "cut_pairs": 0},
             {"pearson": 0.19, "spearman": 0.10, "mse": 1.60, "baseline_mse": 1.55,
              "cut_pairs": 0},
             {"pearson": 0.12, "spearman": 0.05, "mse": 1.70, "baseline_mse": 1.55,
              "cut_pairs": 0}]
    assert score_bounds(sim, "pearson") == (-1.0, 1.0) and score_bounds(sim, "mse") == (0.0, None)
    assert score_scale(sim, "baseline_mse") is None and score_scale(sim, "cut_pairs") is None
    stats = seed_statistics(seeds, lambda k: score_scale(sim, k), lambda k: score_bounds(sim, k))
    p = stats["pearson"]
    assert p["scale"] == 100.0 and p["mean"] == pytest.approx(0.0833, abs=1e-4)
    assert p["ci95_low"] == pytest.approx(0.0833 - 4.303 * 0.1290 / 3 ** 0.5, abs=2e-3)
    assert p["ci95_low"] < -0.2  # not clipped at 0
    assert stats["mse"]["scale"] == 1.0 and stats["mse"]["ci95_high"] > 1.78
    assert stats["baseline_mse"]["scale"] is None and stats["cut_pairs"]["scale"] is None
    # a correlation's interval never leaves [-1, 1]
    wide = seed_statistics([{"pearson": -0.9}, {"pearson": 0.95}], lambda k: 100.0,
                           lambda k: score_bounds(sim, k))["pearson"]
    assert (wide["ci95_low"], wide["ci95_high"]) == (-1.0, 1.0)
    # adapt's summary (same statistics) keeps the sign too
    summary = score_summary(task_metrics("sim"), [{"test": s} for s in seeds])
    assert summary["pearson"]["ci95_low"] < -20.0 and summary["pearson"]["mean"] == pytest.approx(8.33, abs=0.01)


def test_seed_statistics_leave_out_the_dev_records_training_progress():
    """Helper trial: ``finetune --seeds``' summary listed ``train_tokens`` and ``train_seconds``
    (the dev evaluation record's learning-curve fields) as dev metrics."""
    dev = [{"pearson": 0.5, "train_tokens": 1000, "train_seconds": 3.5, "cut_pairs": 0},
           {"pearson": 0.7, "train_tokens": 1000, "train_seconds": 3.9, "cut_pairs": 1}]
    stats = seed_statistics(dev, lambda k: score_scale(get_task("sim"), k))
    assert set(stats) == {"pearson", "cut_pairs"}
    assert stats["pearson"]["mean"] == pytest.approx(0.6)
