"""The encoder release (bertkit.bench.release): fp16 on disk, fp32 on load, outputs within fp16
rounding of the source's, provenance kept, about half the bytes."""

import json

import pytest
import torch

from bertkit.bench.encoders import resolve
from bertkit.bench.release import FP16_RELATIVE, export_encoder, verify
from bertkit.errors import BertkitError

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(195)]


@pytest.fixture()
def source(tmp_path, monkeypatch):
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path / "data"))
    corpus = tmp_path / "data" / "corpus" / "train.txt"
    corpus.parent.mkdir(parents=True)
    corpus.write_text("w1 w2\n", encoding="utf-8")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    path = tmp_path / "run" / "model"
    BertForMaskedLM(config).save_pretrained(path)
    (tmp_path / "vocab.txt").write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    BertTokenizer(str(tmp_path / "vocab.txt")).save_pretrained(path)
    (path / "bertkit.json").write_text(json.dumps(
        {"task": "pretrain", "corpus": str(corpus), "masking": "span",
         "base_model": str(tmp_path / "gone")}), encoding="utf-8")
    return path


def test_export_reload_fp32_outputs_within_fp16_rounding(source, tmp_path):
    from transformers import AutoModel

    out = export_encoder(source, tmp_path / "encoders" / "S-span", "S-span",
                         provenance={"recipe": "recipes/pretrain/mini-s-span.yaml"})
    assert not (tmp_path / "encoders" / "S-span.tmp").exists()
    before, after = AutoModel.from_pretrained(source), AutoModel.from_pretrained(out)
    assert after.embeddings.word_embeddings.weight.dtype == torch.float32  # upcast on load
    ids = torch.tensor([[2, 10, 11, 12, 3]])
    with torch.no_grad():
        a, b = before(ids).last_hidden_state, after(ids).last_hidden_state
    assert a.shape == b.shape == (1, 5, 32)
    # weights rounded to fp16 (<= 2^-11 relative): outputs move by a few roundoffs, not more
    assert 0 < (a - b).abs().max().item() < 50 * FP16_RELATIVE * a.abs().max().item()
    check = verify(out, source)
    assert 0 < check["max_abs_diff"] <= FP16_RELATIVE * 1.0  # init weights are < 1 in size
    src_bytes = (source / "model.safetensors").stat().st_size
    out_bytes = (out / "model.safetensors").stat().st_size
    assert 0.45 * src_bytes < out_bytes < 0.55 * src_bytes


def test_export_keeps_provenance_and_bench_reads_it(source, tmp_path):
    out = export_encoder(source, tmp_path / "S", "S", provenance={"stage": "pretrain-S"})
    record = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    assert record["name"] == "S" and record["stage"] == "pretrain-S"
    assert record["corpora"] == ["scientific"]  # the data file as its registered name
    assert record["lineage"][0]["masking"] == "span"
    assert record["dtype_stored"] == "float16" and len(record["weights_sha256"]) == 64
    meta = json.loads((out / "bertkit.json").read_text(encoding="utf-8"))
    assert meta["corpus"] == "scientific" and "base_model" not in meta
    assert (out / "vocab.txt").read_text(encoding="utf-8").split() == WORDS
    assert "# bertkit miniature encoder S" in (out / "README.md").read_text(encoding="utf-8")
    encoder = resolve("S", str(out))  # bench --encoder S=DIR takes it
    assert encoder.corpora and encoder.corpora[0].endswith("corpus/train.txt")


def test_initial_weights_are_released_without_a_corpus(source, tmp_path):
    """Helper trial: R (initial weights of a pretraining run, 0 tokens) carried the run's corpus
    and was listed in the contamination table: it saw no text."""
    out = export_encoder(source, tmp_path / "R", "R", provenance={"pretraining_tokens": 0})
    record = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    assert record["corpora"] == [] and record["lineage"][0]["corpus"] == []
    meta = json.loads((out / "bertkit.json").read_text(encoding="utf-8"))
    assert meta["corpus"] == "" and meta["steps"] == 0
    assert resolve("R", str(out)).corpora == ()
    assert "none: initial weights, never pretrained" in (out / "README.md").read_text()


def test_export_refuses_and_verify_catches_tampering(source, tmp_path):
    out = export_encoder(source, tmp_path / "S", "S")
    with pytest.raises(BertkitError, match="exists"):
        export_encoder(source, out, "S")
    with pytest.raises(BertkitError, match="not a saved encoder"):
        export_encoder(tmp_path, tmp_path / "X", "X")
    data = bytearray((out / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (out / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(BertkitError, match="sha256"):
        verify(out)


def test_bertkit_fine_tuning_loads_the_release_in_fp32(source, tmp_path):
    """The NER loader (as every task's: a plain from_pretrained) gets fp32 parameters from the
    fp16 file; without the config's dtype it would get fp16 (transformers 5's "auto")."""
    from bertkit.tasks.ner.model import build_tagger

    out = export_encoder(source, tmp_path / "S", "S")
    tagger = build_tagger(str(out), ["O", "B-X", "I-X"], crf=False, label_all_subwords=False)
    dtypes = {p.dtype for p in tagger.parameters()}
    assert dtypes == {torch.float32}
    config = json.loads((out / "config.json").read_text())
    config.pop("dtype")
    (out / "config.json").write_text(json.dumps(config))
    tagger = build_tagger(str(out), ["O", "B-X", "I-X"], crf=False, label_all_subwords=False)
    assert torch.float16 in {p.dtype for p in tagger.parameters()}  # why the export sets it
