import json

import torch
from safetensors.torch import load_file

from bertkit.tasks.ner import NERConfig, finetune_ner
from tests.conftest import write_ner_dir

IOB1 = "a\tI-Chem\nb\tI-Chem\nc\tO\nd\tI-Dis\n\ne\tO\nf\tI-Chem\n"


def run(tmp_path, name, data, **kw):
    cfg = NERConfig(data=str(data), model=kw.pop("model"), epochs=2, batch_size=2, lr=1e-3,
                    device="cpu", output_dir=str(tmp_path / name), logging_steps=1, **kw)
    return finetune_ner(cfg)


def test_same_seed_same_result(tmp_path, ner_dir, tiny_encoder):
    a = run(tmp_path, "a", ner_dir, model=tiny_encoder, seed=7)
    b = run(tmp_path, "b", ner_dir, model=tiny_encoder, seed=7)
    untimed = lambda rec: {k: v for k, v in rec.items() if k != "train_seconds"}  # wall clock
    assert a["test"] == b["test"] and untimed(a["dev"]) == untimed(b["dev"])
    assert a["dev"]["train_tokens"] == b["dev"]["train_tokens"] > 0
    wa = load_file(str(tmp_path / "a" / "model" / "model.safetensors"))
    wb = load_file(str(tmp_path / "b" / "model" / "model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    losses = lambda d: [json.loads(l).get("loss") for l in (tmp_path / d / "metrics.jsonl").open()]
    assert losses("a") == losses("b")


def test_iob1_data_scored_in_iob2_and_unseen_type_reported(tmp_path, tiny_encoder):
    test = IOB1 + "\ng\tI-Gene\n"
    d = write_ner_dir(tmp_path / "d", train=IOB1, dev=IOB1, test=test)
    res = run(tmp_path, "r", d, model=tiny_encoder)
    # the model knows Chem and Dis only; the test-only Gene type is scored as missed, not a crash
    assert set(res["test"]["per_type"]) == {"Chem", "Dis", "Gene"}
    assert res["test"]["per_type"]["Gene"]["recall"] == 0
    saved = json.loads((tmp_path / "r" / "model" / "config.json").read_text())["id2label"]
    assert list(saved.values()) == ["B-Chem", "B-Dis", "I-Chem", "I-Dis", "O"]
    gold = [l.split("\t")[1] for l in (tmp_path / "r" / "test_predictions.conll").read_text().splitlines() if l]
    assert gold == ["B-Chem", "I-Chem", "O", "B-Dis", "O", "B-Chem", "B-Gene"]
