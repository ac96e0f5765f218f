"""Issue 17 item 6: a classifier that collapses to one label is warned about at each evaluation,
with the majority-class baseline beside the scores and in results.json (RE and cls)."""

import json

from rich.console import Console

from tests.tasks.cls.conftest import write_cls_dir
from tests.tasks.re.conftest import write_re_dir

# lr 1e-9: the fresh head hardly moves, so a tiny random encoder predicts one label everywhere
STILL = {"epochs": 1, "batch_size": 3, "lr": 1e-9, "device": "cpu", "warmup": 0.0}


def _console():
    return Console(record=True, width=300)


def test_re_warns_at_each_evaluation_and_records_the_baseline(tmp_path, still_encoder):
    from bertkit.tasks.re import REConfig, finetune_re

    d = write_re_dir(tmp_path / "d")
    console = _console()
    r = finetune_re(REConfig(data=str(d), model=still_encoder, output_dir=str(tmp_path / "r"),
                             **STILL), console)
    text = console.export_text()
    assert "dev: the classifier may have collapsed" in text
    assert "test: the classifier may have collapsed" in text
    base = r["test"]["baseline"]
    assert base["single_label"] and base["at_or_below_baseline"]
    assert base["majority_share"] == 2 / 6  # three labels, two pairs each
    assert r["dev"]["baseline_macro_f1"] == base["baseline_macro_f1"]
    saved = json.loads((tmp_path / "r" / "results.json").read_text())
    assert saved["test"]["baseline"]["warning"].startswith("the classifier may have collapsed")


def test_cls_warns_and_records_the_baseline(tmp_path, still_encoder):
    from bertkit.tasks.cls import CLSConfig, finetune_cls

    d = write_cls_dir(tmp_path / "d")
    console = _console()
    r = finetune_cls(CLSConfig(data=str(d), model=still_encoder, output_dir=str(tmp_path / "c"),
                               **STILL), console)
    text = console.export_text()
    assert text.count("may have collapsed") >= 2  # dev (each epoch) and test
    assert r["test"]["baseline"]["predicted_labels"] == 1
    assert r["test"]["macro_f1"] <= r["test"]["baseline"]["baseline_macro_f1"] + 1e-9
