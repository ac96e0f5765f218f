import pytest
import numpy as np
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

from bertkit.data.conll import Sentence
from bertkit.tasks.ner.model import build_tagger, load_tagger
from bertkit.tasks.ner.task import tag_sentences
from bertkit.training.devices import make_runtime

LABELS = ["B-Chem", "B-Dis", "I-Chem", "I-Dis", "O"]
SENTS = [Sentence("Aspirin induced renal failure .".split()),
         Sentence(["word"] * 300), Sentence(["x", "\u200b", "y"])]


def test_save_reload_same_predictions_and_hf_loadable(tiny_encoder, tokenizer, tmp_path):
    for crf in (False, True):
        torch.manual_seed(0)
        tagger = build_tagger(tiny_encoder, LABELS, crf=crf, label_all_subwords=False)
        if crf:
            with torch.no_grad():
                tagger.crf.transitions.normal_()
        rt = make_runtime("cpu", "fp32")
        before = tag_sentences(tagger, tokenizer, SENTS, rt, max_length=64)
        assert [len(p) for p in before] == [5, 300, 3]
        tagger.prune_last_layer = False  # the full forward pass decodes the same
        assert tag_sentences(tagger, tokenizer, SENTS, rt, max_length=64, batch_size=1) == before
        tagger.prune_last_layer = True
        out = tmp_path / f"m{crf}"
        tagger.save(out, tokenizer, {"max_length": 64})
        again, meta = load_tagger(out)
        assert again.labels == LABELS and meta["crf"] is crf
        assert tag_sentences(again, AutoTokenizer.from_pretrained(out), SENTS, rt, 64) == before
        hf = AutoModelForTokenClassification.from_pretrained(out)
        assert hf.config.id2label == dict(enumerate(LABELS))
        tagged = pipeline("token-classification", model=str(out))("Aspirin induced renal failure")
        assert all(t["entity"] in LABELS for t in tagged)


def test_loss_ignores_unlabelled_and_crf_loss_finite(tiny_encoder, tokenizer):
    from bertkit.tasks.ner.encoding import collate, encode

    sents = [Sentence("Aspirin induced renal failure".split(), ["B-Chem", "O", "B-Dis", "I-Dis"])]
    l2i = {l: i for i, l in enumerate(LABELS)}
    for crf, las in ((False, False), (True, True)):
        tagger = build_tagger(tiny_encoder, LABELS, crf=crf, label_all_subwords=las)
        windows, _ = encode(sents, tokenizer, l2i, 64, label_all_subwords=las)
        out = tagger(**collate(windows, tokenizer.pad_token_id))
        assert out["logits"].shape[:2] == (1, len(windows[0].input_ids))
        assert torch.isfinite(out["loss"]) and out["loss"].item() > 0
        out["loss"].backward()
        assert np.isfinite(tagger.encoder.classifier.weight.grad.abs().sum().item())


def test_loading_another_task_as_ner_is_a_clear_error(tmp_path):
    import json

    from bertkit.tasks.ner.model import load_tagger

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "bertkit.json").write_text(json.dumps({"task": "pretrain"}))
    from bertkit.errors import BertkitError

    with pytest.raises(BertkitError, match="not of 'finetune ner'"):
        load_tagger(tmp_path)


def test_words_without_pieces_are_warned_with_file_and_line(tiny_encoder, tokenizer):
    from rich.console import Console

    console = Console(record=True, width=200)
    sents = [Sentence(["x", "\u200b", "y"], file="in.txt", line=7, one_line=True)]
    tags = tag_sentences(build_tagger(tiny_encoder, LABELS, crf=False, label_all_subwords=False),
                         tokenizer, sents, make_runtime("cpu", "fp32"), 64, console=console)
    assert len(tags[0]) == 3
    text = console.export_text()
    assert "1 word(s) with no word pieces" in text and "in.txt:7" in text
    assert "each still gets one prediction" in text


def test_truncated_weights_give_a_message_not_a_traceback(tiny_encoder, tmp_path):
    import shutil

    from bertkit.errors import BertkitError

    bad = tmp_path / "bad"
    shutil.copytree(tiny_encoder, bad)
    weights = bad / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:40])
    with pytest.raises(BertkitError, match="cannot load model"):
        build_tagger(str(bad), LABELS, crf=False, label_all_subwords=False)
