"""ONNX and int8 exports kept after the weights beside them were replaced with older times, as
``cp -a`` and ``rsync -a`` copy them (issue 66, kind 10): an export records the hash of the
weights it was made from and is made again, said so, when they differ, whatever the times."""

import importlib.util
import os
import shutil
import warnings

import pytest
import torch

from bertkit.predict import onnx_backend
from bertkit.tasks.ner.model import build_tagger, load_tagger
from bertkit.tasks.ner.task import tag_sentences
from bertkit.training.devices import make_runtime
from tests.tasks.ner.test_predict_backends import LABELS, SENTS

pytestmark = pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnx")),
                                reason="onnxruntime/onnx not installed (pip install 'bertkit[onnx]')")


def _save(encoder, tokenizer, path, seed: int) -> None:
    torch.manual_seed(seed)
    tagger = build_tagger(encoder, LABELS, crf=False, label_all_subwords=False)
    with torch.no_grad():
        tagger.encoder.classifier.weight.normal_(0, 2.0)
    tagger.eval().save(path, tokenizer, {"max_length": 64})


def _tags(path, tokenizer, backend):
    tagger, _ = load_tagger(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tags = tag_sentences(tagger, tokenizer, SENTS, make_runtime("cpu", "fp32"), 64,
                             backend=backend)
    return tags, [str(w.message) for w in caught if "again" in str(w.message)]


def _copy_weights_with_old_times(src, dest):
    """Weights of ``src`` over ``dest``'s, with times older than ``dest``'s exports (cp -a)."""
    for f in src.glob("*.safetensors"):
        shutil.copy2(f, dest / f.name)
        os.utime(dest / f.name, ns=(1_000_000_000, 1_000_000_000))


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_export_made_again_when_the_weights_are_replaced_with_old_times(
        tiny_encoder, tokenizer, tmp_path, backend):
    model, other = tmp_path / "m", tmp_path / "other"
    _save(tiny_encoder, tokenizer, model, 0)
    _save(tiny_encoder, tokenizer, other, 7)
    first, said = _tags(model, tokenizer, backend)
    assert said == []
    export = model / onnx_backend.ONNX_FILE
    assert onnx_backend.made_from(export) == onnx_backend.weights_hashes(model)
    _copy_weights_with_old_times(other, model)
    torch_tags, _ = _tags(model, tokenizer, "torch")
    got, said = _tags(model, tokenizer, backend)
    assert said and f"{export}: exported again from {model}: the weights differ" in said[0]
    assert "sha256" in said[0]
    assert onnx_backend.made_from(export) == onnx_backend.weights_hashes(other)
    if backend == "onnx":
        assert got == torch_tags != first
    else:
        int8 = model / ("model" + onnx_backend.INT8_SUFFIX)
        assert onnx_backend.made_from(int8) == onnx_backend.weights_hashes(other)
        assert any(f"{int8}: quantised again" in s for s in said)
    again, said = _tags(model, tokenizer, backend)  # fresh now: reused, nothing said
    assert again == got and said == []


def test_export_without_a_record_is_made_again(tiny_encoder, tokenizer, tmp_path):
    model = tmp_path / "m"
    _save(tiny_encoder, tokenizer, model, 0)
    _tags(model, tokenizer, "onnx")
    onnx_backend.record_path(model / onnx_backend.ONNX_FILE).unlink()  # an older bertkit's
    _, said = _tags(model, tokenizer, "onnx")
    assert said and "records no hash of the weights" in said[0]


def test_predict_ner_says_the_export_is_made_again(tiny_encoder, tokenizer, tmp_path):
    from typer.testing import CliRunner

    from bertkit.cli import app

    model, other = tmp_path / "m", tmp_path / "other"
    _save(tiny_encoder, tokenizer, model, 0)
    _save(tiny_encoder, tokenizer, other, 7)
    (tmp_path / "in.txt").write_text("aspirin induced renal failure\n", encoding="utf-8")
    args = ["predict", "ner", "-m", str(model), "-i", str(tmp_path / "in.txt"), "--device", "cpu",
            "--backend", "onnx", "-o", str(tmp_path / "out.conll")]
    assert CliRunner().invoke(app, args).exit_code == 0
    _copy_weights_with_old_times(other, model)
    res = CliRunner().invoke(app, args)
    said = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert f"note: {model / 'model.onnx'}: exported again from {model}: the weights differ" in said
