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
