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


def test_cls_pooling_is_a_standard_class_with_pooler_and_pipeline(tiny_encoder, tmp_path):
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    model, tok, mid = build_relation_model(tiny_encoder, LABELS, "cls", MarkerSet())
    assert type(model) is BertForSequenceClassification and model.bert.pooler is not None
    # bertkit's batches carry entity_pos; the standard class takes them (and ignores it)
    batch = collate(encode(examples(), tok, mid, MarkerSet(), {}, 48), tok.pad_token_id)
    batch["labels"] = torch.tensor([1, 0])
    model.eval()
    out = model(**batch)
    assert out.logits.shape == (2, 3) and out.loss > 0
    save_relation_model(model, tok, tmp_path, {})
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["architectures"] == ["BertForSequenceClassification"] and "auto_map" not in cfg
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
    model, tok, _ = build_relation_model(str(path), LABELS, "cls", MarkerSet())
    assert type(model).__name__ == "DistilBertForSequenceClassification"
    assert model.get_input_embeddings().weight.shape[0] == len(tok)


def test_resume_of_an_old_cls_run_rebuilds_the_old_model(tiny_encoder, tmp_path, monkeypatch):
    """A cls run checkpointed before issue 18 (custom class, no pooler) resumes with that class."""
    import shutil

    import bertkit.tasks.re.task as re_task
    from bertkit.tasks.re import REConfig, finetune_re
    from bertkit.tasks.re.model import legacy_cls_checkpoint
    from tests.tasks.re.conftest import write_re_dir

    def old_builder(model_name, labels, pooling, markers, resume_dir=None):
        from transformers import AutoConfig

        tok = AutoTokenizer.from_pretrained(model_name)
        from bertkit.tasks.re.encoding import add_markers

        mid = add_markers(tok, markers)
        config = AutoConfig.from_pretrained(model_name, num_labels=len(labels),
                                            id2label=dict(enumerate(labels)),
                                            label2id={v: k for k, v in enumerate(labels)})
        config.relation_pooling = "cls"
        model = BertForRelationClassification.from_pretrained(model_name, config=config)
        model.resize_token_embeddings(len(tok))
        return model, tok, mid

    data = write_re_dir(tmp_path / "d")
    run = tmp_path / "run"
    cfg = dict(data=str(data), model=tiny_encoder, epochs=1, batch_size=4, device="cpu",
               save_steps=1, output_dir=str(run))
    with monkeypatch.context() as m:
        m.setattr(re_task, "build_relation_model", old_builder)
        first = finetune_re(REConfig(**cfg))
    assert legacy_cls_checkpoint(run) and not legacy_cls_checkpoint(tmp_path)
    (run / "results.json").unlink()  # as if stopped after the last checkpoint
    shutil.rmtree(run / "model")
    again = finetune_re(REConfig(**cfg, resume=True))
    assert again["steps"] == first["steps"] and again["test"] == first["test"]
    model, *_ = load_relation_model(run)
    assert isinstance(model, BertForRelationClassification) and model.pooling == "cls"
    # a new cls run builds the standard class
    fresh, _, _ = build_relation_model(tiny_encoder, LABELS, "cls", MarkerSet(), resume_dir=tmp_path)
    assert type(fresh).__name__ == "BertForSequenceClassification"
