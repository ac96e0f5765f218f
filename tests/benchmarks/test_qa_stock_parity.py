"""benchmarks/qa_vs_stock.py's stock side labels windows as bertkit does (same windows, same
gold pieces; bertkit's trimmed answers aside), and its post-processing reads the same answer."""

import importlib.util
from pathlib import Path

import numpy as np

from bertkit.tasks.qa.data import QAExample
from bertkit.tasks.qa.decode import decode
from bertkit.tasks.qa.encoding import encode

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "qa_vs_stock.py"
CONTEXT = " ".join(f"w{i}" for i in range(80)) + " the ACE2 receptor binds spike ."


def _script():
    spec = importlib.util.spec_from_file_location("bench_qa_vs_stock", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stock_and_bertkit_windows_and_labels_agree(tokenizer):
    bench = _script()
    start = CONTEXT.index("ACE2 receptor")
    batch = {"id": ["q"], "question": ["  Which receptor?"], "context": [CONTEXT],
             "answers": [{"text": ["ACE2 receptor"], "answer_start": [start]}]}
    stock = bench.prepare_train_features(dict(batch), tokenizer, 40, 10)
    ours = encode([QAExample("q", "Which receptor?", CONTEXT, ["ACE2 receptor"], [start])],
                  tokenizer, max_length=40, doc_stride=10)
    assert len(stock["input_ids"]) == len(ours) > 2
    for i in range(len(ours)):
        n = len(ours.input_ids[i])
        assert stock["input_ids"][i][:n] == ours.input_ids[i].tolist()
    # run_qa.py labels with the [CLS] index (0) as bertkit does
    assert stock["start_positions"] == ours.start_positions.tolist()
    assert stock["end_positions"] == ours.end_positions.tolist()


def test_stock_postprocessing_reads_the_same_best_span(tokenizer):
    bench = _script()
    start = CONTEXT.index("ACE2 receptor")
    ex = QAExample("q", "Which receptor?", CONTEXT, ["ACE2 receptor"], [start])
    feats = encode([ex], tokenizer, max_length=40, doc_stride=10)
    labelled = int(np.flatnonzero(feats.start_positions > 0)[0])
    F, T = len(feats), 40
    s = np.full((F, T), -5.0, dtype=np.float32)
    e = np.full((F, T), -5.0, dtype=np.float32)
    s[labelled, feats.start_positions[labelled]] = 5.0
    e[labelled, feats.end_positions[labelled]] = 5.0
    ours = decode(s, e, feats, [CONTEXT])
    val = bench.prepare_validation_features(
        {"id": ["q"], "question": ["Which receptor?"], "context": [CONTEXT]}, tokenizer, 40, 10)
    features = [{"example_id": val["example_id"][i], "offset_mapping": val["offset_mapping"][i]}
                for i in range(len(val["input_ids"]))]
    preds, _, _ = bench.postprocess_qa_predictions(_Examples(), features, (s, e))
    assert ours.text == ["ACE2 receptor"] and preds["q"] == "ACE2 receptor"


class _Examples(list):
    """The one-question ``datasets`` split postprocess_qa_predictions iterates."""

    def __init__(self):
        super().__init__([{"id": "q", "context": CONTEXT}])

    def __getitem__(self, key):
        if key == "id":
            return ["q"]
        return super().__getitem__(key)


def test_report_does_not_call_a_one_seed_goal_met():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "qa_vs_stock.py"
    spec = importlib.util.spec_from_file_location("qa_vs_stock_report", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def runs(f1, tp):
        return {"test": {"f1": f1, "exact": f1 - 5}, "train_questions_per_second": tp}

    lines = []
    results = {"stock": {1: runs(9.45, 0.33)}, "bertkit": {1: runs(10.19, 1.72)}}
    gain, ratio = mod.report(results, [1], lines.append)
    assert round(gain, 2) == 0.74 and round(ratio, 2) == 5.21
    assert "met" not in lines[-1].replace("not assessed", "") and "fewer than 3 seeds" in lines[-1]
    lines.clear()
    results = {side: {s: runs(f, t) for s in (1, 2, 3)}
               for side, f, t in (("stock", 70.0, 1.0), ("bertkit", 69.0, 2.0))}
    mod.report(results, [1, 2, 3], lines.append)
    assert "(goal >= 0: MISSED)" in lines[-1] and "(goal >= 1.5x: met)" in lines[-1]
    lines.clear()
    results["bertkit"] = {s: runs(75.0 + s, 2.0) for s in (1, 2, 3)}  # clear of stock's range
    mod.report(results, [1, 2, 3], lines.append)
    assert "(goal >= 0: met)" in lines[-1]


def test_stock_dynamic_padding_gives_the_same_windows_unpadded(tokenizer):
    # the stock-dyn side (pad_to_max_length False) differs from stock only in the padding
    bench = _script()
    start = CONTEXT.index("ACE2 receptor")
    batch = {"id": ["q"], "question": ["Which receptor?"], "context": [CONTEXT],
             "answers": [{"text": ["ACE2 receptor"], "answer_start": [start]}]}
    padded = bench.prepare_train_features(dict(batch), tokenizer, 40, 10)
    dyn = bench.prepare_train_features(dict(batch), tokenizer, 40, 10, pad=False)
    assert len(dyn["input_ids"]) == len(padded["input_ids"]) > 2
    assert any(len(x) < 40 for x in dyn["input_ids"]) and all(len(x) == 40
                                                                for x in padded["input_ids"])
    for a, b in zip(dyn["input_ids"], padded["input_ids"]):
        assert b[:len(a)] == a and set(b[len(a):]) <= {tokenizer.pad_token_id}
    assert dyn["start_positions"] == padded["start_positions"]
    assert dyn["end_positions"] == padded["end_positions"]


def _stage(tmp_path, seed, f1, tp, **changed):
    import json

    args = {"data": "squad", "epochs": 1, "lr": 1e-4, "seeds": str(seed),
            "max_train_samples": 700, "json": "x", "name": f"s{seed}"} | changed
    run = {"test": {"f1": f1, "exact": f1 - 10}, "train_questions_per_second": tp,
           "train_seconds": 1.0, "train_windows": 1, "predict_seconds": 1.0,
           "predict_questions_per_second": 2 * tp, "load_before": 1.0, "load_after": 1.0}
    runs = {"stock": {str(seed): run | {"train_questions_per_second": tp / 5,
                                        "test": {"f1": f1 - 1, "exact": f1 - 11}}},
            "bertkit": {str(seed): run}}
    path = tmp_path / f"s{seed}.json"
    path.write_text(json.dumps({"args": args, "runs": runs}))
    return path


def test_merge_joins_one_seed_stages_into_the_three_seed_verdict(tmp_path):
    import json

    import pytest

    bench = _script()
    paths = [_stage(tmp_path, s, f, t) for s, f, t in ((1, 30.0, 4.0), (2, 32.0, 5.0),
                                                        (3, 31.0, 3.0))]
    lines = []
    results, seeds, first = bench.merge(paths, lines.append)
    assert seeds == [1, 2, 3] and first["max_train_samples"] == 700
    gain, ratio = bench.report(results, seeds, lines.append)
    assert gain == pytest.approx(1.0) and ratio == pytest.approx(5.0)
    # +1 point with ranges 29-31 against 30-32: not worse, but no difference either
    assert ("(goal >= 0: met; the seed ranges overlap: no F1 difference shown)" in lines[-1]
            and "(goal >= 1.5x: met)" in lines[-1])
    out = tmp_path / "merged.json"
    bench.write_json(out, first | {"seeds": "1,2,3"}, results, seeds, gain, ratio)
    saved = json.loads(out.read_text())
    assert saved["seeds"] == [1, 2, 3] and set(saved["runs"]["bertkit"]) == {"1", "2", "3"}
    # a stage run with another budget, or a seed twice, is refused
    other = _stage(tmp_path, 4, 30.0, 4.0, max_train_samples=800)
    with pytest.raises(SystemExit, match="other settings"):
        bench.merge(paths + [other], lines.append)
    with pytest.raises(SystemExit, match="seed 1 of stock is in two"):
        bench.merge(paths + paths[:1], lines.append)


def test_stock_tuned_side_isolates_the_hyper_parameters(monkeypatch):
    """stock-tuned = stock-grouped with bertkit's lr, warm-up and weight decay; the report
    compares bertkit with it on the seeds it ran."""
    bench = _script()
    calls = []
    monkeypatch.setattr(bench, "stock_recipe", lambda *a, **k: calls.append(k) or {})
    bench.run_side("stock-tuned", None, None, 1, "o", False)
    bench.run_side("stock-grouped", None, None, 1, "o", False)
    bench.run_side("stock-dyn-tuned", None, None, 1, "o", False)
    assert calls == [{"pad": False, "grouped": True, "tuned": True},
                     {"pad": False, "grouped": True, "tuned": False},
                     {"pad": False, "grouped": False, "tuned": True}]
    monkeypatch.setattr(bench, "bertkit_run", lambda *a, **k: calls.append(k) or {})
    bench.run_side("bertkit-random", None, None, 1, "o", False)
    bench.run_side("bertkit", None, None, 1, "o", False)
    bench.run_side("bertkit-all-windows", None, None, 1, "o", False)
    assert calls[-3:] == [{"length_group": 1, "null_window_rate": None},
                          {"length_group": 50, "null_window_rate": None},
                          {"length_group": 50, "null_window_rate": 1.0}]

    def runs(f1, tp):
        return {"test": {"f1": f1, "exact": f1 - 5}, "train_questions_per_second": tp}

    lines = []
    results = {"stock-grouped": {1: runs(8.0, 6.0)}, "stock-tuned": {1: runs(30.0, 6.0)},
               "bertkit": {1: runs(33.0, 7.5)}}
    bench.report(results, [1], lines.append)
    tuned = [x for x in lines if "bertkit/stock-tuned" in x]
    assert len(tuned) == 1 and "training throughput 1.25x, F1 +3.00 points" in tuned[0]


def test_seed_lists_are_read_or_refused_with_a_message():
    bench = _script()
    assert bench.seed_set("all", [1, 2, 3], "--tuned-seeds") == {1, 2, 3}
    assert bench.seed_set("", [1, 2, 3], "--tuned-seeds") == set()
    assert bench.seed_set("1,3", [1, 2, 3], "--tuned-seeds") == {1, 3}
    import pytest
    with pytest.raises(SystemExit, match="--tuned-seeds 'x': expected 'all' or seeds"):
        bench.seed_set("x", [1], "--tuned-seeds")


def test_merge_reads_stages_written_before_the_null_window_and_model_options(tmp_path):
    """A stage whose saved arguments lack --null-window-rate and --model ran with every window
    and the packaged model: it merges with new stages at those values, not with others."""
    import json

    import pytest

    bench = _script()
    old = _stage(tmp_path, 1, 30.0, 4.0)
    new = _stage(tmp_path, 2, 32.0, 5.0, null_window_rate=1.0, model=None)
    saved = json.loads(old.read_text())
    assert "null_window_rate" not in saved["args"]
    results, seeds, _ = bench.merge([old, new], [].append)
    assert seeds == [1, 2]
    sampled = _stage(tmp_path, 3, 31.0, 9.0, null_window_rate=0.1, model=None)
    with pytest.raises(SystemExit, match="null_window_rate"):
        bench.merge([old, sampled], [].append)


def test_report_says_a_subsampled_throughput_ratio_is_the_recipes(tmp_path):
    """bertkit at --null-window-rate < 1 trains fewer windows: the questions/s ratio is the
    recipe's; the note gives windows/s and the implementation alone (bertkit-all-windows)."""
    import json

    import pytest

    bench = _script()

    def run(f1, seconds, windows, sampled=None):
        return {"test": {"f1": f1, "exact": f1 - 5}, "train_seconds": seconds,
                "train_questions_per_second": 40 / seconds, "train_windows": windows,
                "trained_windows_per_epoch": sampled}

    seeds = [1, 2, 3]
    results = {"stock": {s: run(20.0, 100.0, 900) for s in seeds},
               "bertkit": {s: run(21.0, 20.0, 900, [150, 160]) for s in seeds},
               "bertkit-all-windows": {1: run(21.5, 90.0, 900, [900, 900])}}
    lines = []
    bench.report(results, seeds, lines.append)
    note = [x for x in lines if x.startswith("note: bertkit trained")]
    assert len(note) == 1 and "bertkit trained 17% of its windows" in note[0]
    # windows/s: bertkit 310/20 = 15.5; stock 2 x 900 / 100 = 18; all-windows 1800/90 = 20
    assert "bertkit 15.50, stock 18.00 (0.86x)" in note[0]
    assert "bertkit-all-windows/stock: 1.11x windows/s" in note[0]
    results["bertkit"] = {s: run(21.0, 90.0, 900, [900, 900]) for s in seeds}
    lines = []
    bench.report(results, seeds, lines.append)
    assert not any(x.startswith("note: bertkit trained") for x in lines)
    # an --lr-grid file is not a stage to merge
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"args": {"data": "squad"}, "lr_grid_dev": {}, "chosen_lr": 1e-4}))
    with pytest.raises(SystemExit, match="holds no seeds' runs"):
        bench.merge([grid, grid], [].append)


def test_report_says_when_both_sides_sit_at_the_floor():
    bench = _script()

    def run(f1, em):
        return {"test": {"f1": f1, "exact": em}, "train_questions_per_second": 1.0}

    seeds = [1, 2, 3]
    lines = []
    bench.report({"stock": {s: run(4.0 + s, 0.0) for s in seeds},
                  "bertkit": {s: run(7.0 + s, 1.0) for s in seeds}}, seeds, lines.append)
    assert "both sides at the floor (median EM under 5.0)" in lines[-1]
    lines = []
    bench.report({"stock": {s: run(14.0 + s, 6.0) for s in seeds},
                  "bertkit": {s: run(37.0 + s, 27.0) for s in seeds}}, seeds, lines.append)
    assert "floor" not in lines[-1]


def test_merge_refuses_foreign_files_before_its_log_is_rewritten(tmp_path):
    """A file that is not a stage (JSON lines, a run's results.json) ends in a message, and the
    log named by --name is not touched (it may be a committed one)."""
    import subprocess
    import sys

    lines = tmp_path / "in.jsonl"
    lines.write_text('{"id": 1}\n{"id": 2}\n')
    results = tmp_path / "results.json"
    results.write_text('{"task": "qa", "test": {"f1": 1.0}}')
    log = tmp_path / "logs" / "kept.log"
    log.parent.mkdir()
    log.write_text("committed\n")
    for bad, says in ((lines, "not a --json file of this benchmark"),
                      (results, "no saved arguments")):
        res = subprocess.run([sys.executable, str(SCRIPT), "--merge", str(bad), str(bad),
                              "--log-dir", str(log.parent), "--name", "kept"],
                             capture_output=True, text=True)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        assert says in res.stderr and str(bad) in res.stderr
        assert log.read_text() == "committed\n"
