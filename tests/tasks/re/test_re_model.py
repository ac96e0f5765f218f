import json

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

from bertkit.data.relations import parse_marked, RelationExample
from bertkit.errors import BertkitError
from bertkit.heads.relation import BertForRelationClassification
from bertkit.tasks.re.encoding import MarkerSet, collate, encode
from bertkit.tasks.re.model import build_relation_model, load_relation_model, save_relation_model
from bertkit.tasks.re.task import classify
from bertkit.training.devices import make_runtime

LABELS = ["ACTIVATOR", "INHIBITOR", "SUBSTRATE"]
MARKED = ["<< aspirin >> inhibits [[ cox-1 ]] in platelets .",
          "a long sentence where [[ egfr ]] is far away from the " + "other " * 80 + "<< drug >> ."]
TEXT = "[E1] aspirin [/E1] inhibits [E2] cox-1 [/E2] in platelets ."


def examples():
    return [RelationExample(*parse_marked(t), None) for t in MARKED]


@pytest.mark.parametrize("pooling", ["entity-start", "cls"])
def test_save_reload_identical_predictions_and_hf_auto_classes(tiny_encoder, tmp_path, pooling):
    rt = make_runtime("cpu", "fp32")
    torch.manual_seed(0)
    markers = MarkerSet()
    model, tok, mid = build_relation_model(tiny_encoder, LABELS, pooling, markers)
    assert model.get_input_embeddings().weight.shape[0] == len(tok) == 30522 + 4
    items = encode(examples(), tok, mid, markers, {}, 48)
    assert items[1].truncated
    before = classify(model, items, rt, tok.pad_token_id)
    out = tmp_path / pooling
    save_relation_model(model, tok, out, {"max_length": 48})
    again, tok2, labels, markers2, mid2, meta = load_relation_model(out)
    assert labels == LABELS and mid2 == mid and meta["pooling"] == pooling
    after = classify(again, encode(examples(), tok2, mid2, markers2, {}, 48), rt, tok2.pad_token_id)
    assert np.array_equal(before[0], after[0]) and np.allclose(before[1], after[1])
    # plain Hugging Face: AutoTokenizer keeps the markers as single tokens
    remote = pooling != "cls"
    assert (out / "relation.py").is_file() == remote
    hf = AutoModelForSequenceClassification.from_pretrained(out, trust_remote_code=remote).eval()
    hf_tok = AutoTokenizer.from_pretrained(out)
    enc = hf_tok(TEXT, return_tensors="pt")
    assert enc["input_ids"][0].tolist() == items[0].input_ids.tolist()
    with torch.no_grad():
        probs = torch.softmax(hf(**enc).logits, -1)[0]
    assert hf.config.id2label[int(probs.argmax())] == LABELS[before[0][0]]
    assert abs(probs.max().item() - before[1][0]) < 1e-5


def test_cls_pooling_saves_a_standard_class_with_the_same_logits_and_pipeline(tiny_encoder, tmp_path):
    from transformers import BertForSequenceClassification

    from bertkit.tasks.re.model import to_sequence_classifier

    torch.manual_seed(0)
    model, tok, mid = build_relation_model(tiny_encoder, LABELS, "cls", MarkerSet())
    with torch.no_grad():  # large hidden values: the near-identity pooler must still be exact
        model.bert.encoder.layer[-1].output.LayerNorm.weight.mul_(20.0)
        model.classifier.weight.normal_()
    model.eval()
    batch = collate(encode(examples(), tok, mid, MarkerSet(), {}, 48), tok.pad_token_id)
    batch.pop("labels")
    with torch.no_grad():
        ours = model(**batch).logits
        std = to_sequence_classifier(model)
        theirs = std(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        hidden = model.bert(input_ids=batch["input_ids"]).last_hidden_state[:, 0]
    assert hidden.abs().max() > 10
    assert type(std) is BertForSequenceClassification
    assert torch.allclose(theirs, ours, rtol=1e-5, atol=1e-5)
    save_relation_model(model, tok, tmp_path, {})
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["architectures"] == ["BertForSequenceClassification"] and "auto_map" not in cfg
    assert "relation_pooling" not in cfg and not (tmp_path / "relation.py").exists()
    assert cfg["id2label"] == {"0": "ACTIVATOR", "1": "INHIBITOR", "2": "SUBSTRATE"}
    clf = pipeline("text-classification", model=str(tmp_path), device="cpu")
    (top,) = clf(TEXT)
    with torch.no_grad():
        probs = torch.softmax(model(**tok(TEXT, return_tensors="pt")).logits, -1)[0]
    assert top["label"] == LABELS[int(probs.argmax())]
    assert abs(top["score"] - probs.max().item()) < 1e-5


def test_old_cls_run_without_pooler_still_loads(tiny_encoder, tmp_path):
    """A model saved before cls pooling became BertForSequenceClassification (custom class, no
    pooler) still loads through bertkit and predicts as it did."""
    from transformers import AutoConfig

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(tiny_encoder)
    markers = MarkerSet()
    from bertkit.tasks.re.encoding import add_markers

    mid = add_markers(tok, markers)
    config = AutoConfig.from_pretrained(tiny_encoder, num_labels=3,
                                        id2label=dict(enumerate(LABELS)),
                                        label2id={v: k for k, v in enumerate(LABELS)})
    config.relation_pooling = "cls"
    old = BertForRelationClassification.from_pretrained(tiny_encoder, config=config)
    old.resize_token_embeddings(len(tok))
    BertForRelationClassification.register_for_auto_class("AutoModelForSequenceClassification")
    old.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    (tmp_path / "bertkit.json").write_text(json.dumps({"task": "re", "pooling": "cls",
                                                       "labels": LABELS, "max_length": 48}))
    rt = make_runtime("cpu", "fp32")
    items = encode(examples(), tok, mid, markers, {}, 48)
    before = classify(old.eval(), items, rt, tok.pad_token_id)
    model, *_ = load_relation_model(tmp_path)
    assert isinstance(model, BertForRelationClassification) and model.pooling == "cls"
    after = classify(model, items, rt, tok.pad_token_id)
    assert np.array_equal(before[0], after[0]) and np.allclose(before[1], after[1])


def test_entity_start_needs_bert_and_unknown_pooling(tmp_path, tokenizer):
    from transformers import DistilBertConfig, DistilBertModel

    path = tmp_path / "distil"
    DistilBertModel(DistilBertConfig(vocab_size=tokenizer.vocab_size, dim=32, n_layers=1,
                                     n_heads=2, hidden_dim=64)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    with pytest.raises(BertkitError, match="needs a BERT-architecture encoder"):
        build_relation_model(str(path), LABELS, "entity-start", MarkerSet())
    with pytest.raises(BertkitError, match="unknown pooling"):
        build_relation_model(str(path), LABELS, "mean", MarkerSet())
    # cls pooling: the architecture's own sequence classifier
    model, tok, mid = build_relation_model(str(path), LABELS, "cls", MarkerSet())
    assert type(model).__name__ == "DistilBertForSequenceClassification"
    assert model.get_input_embeddings().weight.shape[0] == len(tok)
    # bertkit's batches carry entity_pos, which the standard class is spared (forward pre-hook)
    batch = collate(encode(examples(), tok, mid, MarkerSet(), {}, 48), tok.pad_token_id)
    batch["labels"] = torch.tensor([1, 0])
    out = model(**batch)
    assert out.logits.shape == (2, 3) and out.loss > 0
    save_relation_model(model, tok, tmp_path / "saved", {})
    again, *_ = load_relation_model(tmp_path / "saved")
    assert type(again).__name__ == "DistilBertForSequenceClassification"

