import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from bertkit.data.relations import parse_marked, RelationExample
from bertkit.tasks.re.encoding import MarkerSet, encode
from bertkit.tasks.re.model import build_relation_model, load_relation_model, save_relation_model
from bertkit.tasks.re.task import classify
from bertkit.training.devices import make_runtime

LABELS = ["ACTIVATOR", "INHIBITOR", "SUBSTRATE"]
MARKED = ["<< aspirin >> inhibits [[ cox-1 ]] in platelets .",
          "a long sentence where [[ egfr ]] is far away from the " + "other " * 80 + "<< drug >> ."]


def examples():
    return [RelationExample(*parse_marked(t), None) for t in MARKED]


def test_save_reload_identical_predictions_and_hf_auto_classes(tiny_encoder, tmp_path):
    rt = make_runtime("cpu", "fp32")
    for pooling in ("entity-start", "cls"):
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
        # plain Hugging Face: AutoTokenizer keeps the markers, the model finds them itself
        hf = AutoModelForSequenceClassification.from_pretrained(out, trust_remote_code=True).eval()
        hf_tok = AutoTokenizer.from_pretrained(out)
        enc = hf_tok("[E1] aspirin [/E1] inhibits [E2] cox-1 [/E2] in platelets .", return_tensors="pt")
        assert enc["input_ids"][0].tolist() == items[0].input_ids.tolist()
        with torch.no_grad():
            logits = hf(**enc).logits
        assert hf.config.id2label[int(logits.argmax())] == LABELS[before[0][0]]
        assert torch.softmax(logits, -1).max().item() == np.float32(before[1][0]).item() or \
            abs(torch.softmax(logits, -1).max().item() - before[1][0]) < 1e-5
