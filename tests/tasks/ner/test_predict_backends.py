"""Prediction-speed paths of ``predict ner`` (issue 48): packed rows and ONNX Runtime give the
same tags as the unpacked PyTorch forward pass."""

import importlib.util

import pytest
import torch

from bertkit.data.conll import Sentence
from bertkit.errors import BertkitError
from bertkit.tasks.ner.encoding import collate, encode
from bertkit.tasks.ner.model import build_tagger, load_tagger
from bertkit.tasks.ner.task import tag_sentences
from bertkit.training.devices import make_runtime

LABELS = ["B-Chem", "B-Dis", "I-Chem", "I-Dis", "O"]
WORDS = "Aspirin induced renal failure in rats treated with cisplatin and lithium".split()
SENTS = [Sentence(WORDS[:n]) for n in (1, 2, 3, 5, 8, 11, 4, 7)] + [Sentence(["word"] * 90)]
HAS_ORT = all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnx"))


def _saved(encoder, tokenizer, tmp_path, crf: bool):
    """``(tagger, runtime, tags)``: the tagger saved to and loaded from ``tmp_path/m``, and its
    PyTorch tags of :data:`SENTS`."""
    _tagger(encoder, crf).save(tmp_path / "m", tokenizer, {"max_length": 64})
    tagger, _ = load_tagger(tmp_path / "m")
    rt = make_runtime("cpu", "fp32")
    return tagger, rt, tag_sentences(tagger, tokenizer, SENTS, rt, 64)


def _tagger(encoder, crf: bool):
    torch.manual_seed(0)
    tagger = build_tagger(encoder, LABELS, crf=crf, label_all_subwords=False)
    with torch.no_grad():  # a head that separates the labels (random init is near-uniform)
        tagger.encoder.classifier.weight.normal_(0, 2.0)
        if crf:
            tagger.crf.transitions.normal_()
    return tagger.eval()


@pytest.mark.parametrize("crf", [False, True])
def test_packed_prediction_equals_unpacked(tiny_encoder, tokenizer, crf):
    tagger = _tagger(tiny_encoder, crf)
    rt = make_runtime("cpu", "fp32")
    plain = tag_sentences(tagger, tokenizer, SENTS, rt, max_length=64)
    packed = tag_sentences(tagger, tokenizer, SENTS, rt, max_length=64, pack=32)
    assert packed == plain and [len(p) for p in packed] == [len(s.tokens) for s in SENTS]
    assert len({t for p in plain for t in p}) > 1  # not one label everywhere
    assert tagger.predict_packer is None  # only for the call
    # the scores themselves: several windows in a 32-piece row, none attending to another
    windows, _ = encode(SENTS[:6], tokenizer, {l: i for i, l in enumerate(LABELS)}, 64)
    batch = collate(windows, tokenizer.pad_token_id)
    args = batch["input_ids"], batch["attention_mask"], batch["word_pos"]
    tagger.prune_last_layer = False
    ref = tagger.emissions(*args)
    from bertkit.inputs.packing import Packer

    tagger.predict_packer = Packer(tagger.encoder.config, 32)
    inputs, _ = tagger.predict_packer.pack(batch["input_ids"], batch["attention_mask"])
    assert inputs["input_ids"].shape[0] < len(windows)  # really packed
    got = tagger.emissions(*args)
    tagger.predict_packer = None
    mask = batch["word_mask"]
    torch.testing.assert_close(got[mask], ref[mask], atol=1e-5, rtol=1e-5)


def test_unknown_backend_refused(tiny_encoder, tokenizer):
    with pytest.raises(BertkitError, match="unknown backend"):
        tag_sentences(_tagger(tiny_encoder, False), tokenizer, SENTS, make_runtime("cpu", "fp32"),
                      64, backend="tensorrt")


def test_onnx_refused_without_onnxruntime(tiny_encoder, tokenizer, monkeypatch):
    import builtins

    real = builtins.__import__

    def hide(name, *args, **kwargs):
        if name.split(".")[0] == "onnxruntime":
            raise ImportError(name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", hide)
    with pytest.raises(BertkitError, match="needs ONNX Runtime") as err:
        tag_sentences(_tagger(tiny_encoder, False), tokenizer, SENTS, make_runtime("cpu", "fp32"),
                      64, backend="onnx")
    assert "bertkit[onnx]" in str(err.value)


@pytest.mark.skipif(not HAS_ORT, reason="onnxruntime/onnx not installed (pip install 'bertkit[onnx]')")
@pytest.mark.parametrize("crf", [False, True])
def test_onnx_backend_same_tags_and_cached(tiny_encoder, tokenizer, tmp_path, crf):
    tagger, rt, ref = _saved(tiny_encoder, tokenizer, tmp_path, crf)
    got = tag_sentences(tagger, tokenizer, SENTS, rt, 64, backend="onnx")
    assert got == ref
    exported = tmp_path / "m" / "model.onnx"
    assert exported.is_file()
    stamp = exported.stat().st_mtime_ns
    again, _ = load_tagger(tmp_path / "m")
    assert tag_sentences(again, tokenizer, SENTS, rt, 64, backend="onnx") == ref
    assert exported.stat().st_mtime_ns == stamp  # reused, not exported again
    windows, _ = encode(SENTS, tokenizer, {l: i for i, l in enumerate(LABELS)}, 64)
    batch = collate(windows, tokenizer.pad_token_id)
    args = batch["input_ids"], batch["attention_mask"], batch["word_pos"]
    onnx_scores = again.emissions(*args)
    again.scorer = None
    torch.testing.assert_close(onnx_scores, again.emissions(*args), atol=1e-4, rtol=1e-4)


@pytest.mark.skipif(not HAS_ORT, reason="onnxruntime/onnx not installed (pip install 'bertkit[onnx]')")
def test_onnx_int8_quantises_matmuls_only_per_channel(tiny_encoder, tokenizer, tmp_path):
    """``onnx-int8`` uses the dev-chosen settings (benchmarks/int8_variants.py): the MatMul weights
    int8 with one scale per output channel, the embedding tables left fp32; cached by name."""
    import onnx

    from bertkit.predict import onnx_backend

    tagger, rt, ref = _saved(tiny_encoder, tokenizer, tmp_path, False)
    got = tag_sentences(tagger, tokenizer, SENTS, rt, 64, backend="onnx-int8")
    assert [len(t) for t in got] == [len(t) for t in ref]  # a tag a word (not the same tags)
    path = tmp_path / "m" / ("model" + onnx_backend.INT8_SUFFIX)
    graph = onnx.load(path).graph
    kinds = {n.op_type for n in graph.node}
    assert "MatMulInteger" in kinds or "DynamicQuantizeMatMul" in kinds
    integer = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    quantised = {t.name for t in graph.initializer if t.data_type in integer}
    gathered = {n.input[0] for n in graph.node if n.op_type == "Gather"}
    assert quantised and not gathered & quantised  # embedding tables stay fp32
    scales = [t for t in graph.initializer if t.name.endswith("_scale") and len(t.dims) == 1
              and t.dims[0] > 1]
    assert scales  # per-channel weight scales
    stamp = path.stat().st_mtime_ns
    assert onnx_backend.quantize(tmp_path / "m" / "model.onnx") == path
    assert path.stat().st_mtime_ns == stamp  # reused


@pytest.mark.skipif(not HAS_ORT, reason="onnxruntime/onnx not installed (pip install 'bertkit[onnx]')")
def test_onnx_export_falls_back_when_model_folder_is_read_only(tiny_encoder, tmp_path,
                                                               monkeypatch):
    from bertkit.predict import onnx_backend

    real = onnx_backend.export_onnx

    def export(encoder, path):
        if path.parent == tmp_path / "ro":
            raise PermissionError(13, "Permission denied", str(path))
        return real(encoder, path)

    monkeypatch.setattr(onnx_backend, "export_onnx", export)
    (tmp_path / "ro").mkdir()
    path = onnx_backend.cached_export(_tagger(tiny_encoder, False).encoder, tmp_path / "ro",
                                      tmp_path / "cache")
    assert path == tmp_path / "cache" / "model.onnx" and path.is_file()
    assert not (tmp_path / "ro" / "model.onnx").exists()
    with pytest.raises(BertkitError, match="cannot write the ONNX export"):  # no fallback
        onnx_backend.cached_export(_tagger(tiny_encoder, False).encoder, tmp_path / "ro")


def test_predict_ner_pack_option_same_output(tiny_encoder, tokenizer, tmp_path):
    from bertkit.tasks.ner.task import predict_ner

    _tagger(tiny_encoder, True).save(tmp_path / "m", tokenizer, {"max_length": 64})
    text = tmp_path / "in.txt"
    text.write_text("\n".join(" ".join(s.tokens) for s in SENTS) + "\n", encoding="utf-8")
    plain = predict_ner(str(tmp_path / "m"), str(text), fmt="jsonl", device="cpu")
    assert plain.count("\n") == len(SENTS)
    assert predict_ner(str(tmp_path / "m"), str(text), fmt="jsonl", device="cpu", pack=32) == plain
    with pytest.raises(BertkitError, match="unknown backend"):
        predict_ner(str(tmp_path / "m"), str(text), device="cpu", backend="tvm")
