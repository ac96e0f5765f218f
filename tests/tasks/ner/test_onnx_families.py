"""``predict ner --backend onnx`` on ModernBERT and DeBERTa-v2/v3 taggers (issue 64): the
TorchScript export with dynamic batch and length axes gives PyTorch's scores at lengths other
than the traced one (1 to 90 words: DeBERTa's relative-position buckets and ModernBERT's rotary
tables are computed in the graph, not frozen at export)."""

import pytest
import torch

from bertkit.tasks.ner.encoding import collate, encode
from bertkit.tasks.ner.model import load_tagger
from bertkit.tasks.ner.task import tag_sentences
from tests.encoder_families import tiny_deberta, tiny_modernbert  # noqa: F401 (fixtures)
from tests.tasks.ner.test_predict_backends import HAS_ORT, LABELS, SENTS, _saved


@pytest.mark.skipif(not HAS_ORT, reason="onnxruntime/onnx not installed (pip install 'bertkit[onnx]')")
@pytest.mark.parametrize("family", ["modernbert", "deberta-v2"])
def test_onnx_backend_gives_pytorchs_tags_on_each_family(family, tiny_modernbert, tiny_deberta,
                                                         tokenizer, tmp_path):
    encoder = tiny_modernbert if family == "modernbert" else tiny_deberta
    tagger, rt, ref = _saved(encoder, tokenizer, tmp_path, crf=False)
    assert tagger.encoder.config.model_type == family
    assert tag_sentences(tagger, tokenizer, SENTS, rt, 64, backend="onnx") == ref
    assert (tmp_path / "m" / "model.onnx").is_file()
    again, _ = load_tagger(tmp_path / "m")
    windows, _ = encode(SENTS, tokenizer, {l: i for i, l in enumerate(LABELS)}, 64)
    batch = collate(windows, tokenizer.pad_token_id)
    args = batch["input_ids"], batch["attention_mask"], batch["word_pos"]
    tag_sentences(again, tokenizer, SENTS[:1], rt, 64, backend="onnx")  # sets its scorer
    assert again.scorer is not None  # ONNX Runtime scores, not PyTorch
    onnx_scores = again.emissions(*args)
    again.scorer = None
    torch.testing.assert_close(onnx_scores, again.emissions(*args), atol=1e-4, rtol=1e-4)
