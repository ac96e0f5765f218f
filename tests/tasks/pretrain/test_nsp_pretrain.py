"""`bertkit pretrain --nsp`: sentence boundaries in the cache, NSP batches, the NSP head, saving."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoModelForPreTraining
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.masking import IGNORE, TokenMasker, VocabInfo
from bertkit.tasks.pretrain import PretrainConfig, pretrain
from bertkit.tasks.pretrain.data import tokenize_corpus
from bertkit.tasks.pretrain.nsp import stream_documents
from bertkit.tasks.pretrain.nsp_batches import NSPBatches


def _cfg(corpus, model, out, **kw):
    base = dict(corpus=str(corpus), model=model, output_dir=str(out), max_steps=4, batch_size=4,
                max_seq_length=32, lr=1e-3, warmup=0.0, logging_steps=1, eval_steps=0,
                device="cpu", cache_dir=str(out.parent / "cache"), masking="token", nsp=True)
    base.update(kw)
    return PretrainConfig(**base)


def test_cache_records_sentences_and_documents(tmp_path, tokenizer):
    text = "the protein kinase .\nstat3 in rats .\n\naspirin .\n\n\ncisplatin treated rats .\n"
    (tmp_path / "c.txt").write_text(text, encoding="utf-8")
    stream = tokenize_corpus([tmp_path / "c.txt"], tokenizer, tmp_path / "cache")
    docs, pseudo = stream_documents(stream)
    lines = [[s for s in d.split("\n") if s] for d in text.split("\n\n") if d.strip()]
    expected = [[tokenizer(s, add_special_tokens=False)["input_ids"] for s in d] for d in lines]
    assert not pseudo and [[s.tolist() for s in d] for d in docs] == expected
    assert stream.documents == 3 and list(stream.sentence_ends) == np.cumsum(
        [len(s) + (i in (2, 3)) for i, s in enumerate(sum(expected, []))]).tolist()
    again = tokenize_corpus([tmp_path / "c.txt"], tokenizer, tmp_path / "cache")
    assert again.cached and [[s.tolist() for s in d] for d in stream_documents(again)[0]] == expected


def test_one_document_corpus_becomes_pseudo_documents(tmp_path, tokenizer):
    corpus = tmp_path / "c.txt"  # 150 sentences, no blank line
    corpus.write_text("".join(f"stat3 in rats {i} .\n" for i in range(150)), encoding="utf-8")
    docs, pseudo = stream_documents(tokenize_corpus([corpus], tokenizer, tmp_path / "cache"), 64)
    assert pseudo and [len(d) for d in docs] == [64, 64, 22]


def _batches(corpus, tokenizer, tmp_path, masker=None, short_seq_prob=0.5):
    stream = tokenize_corpus([corpus], tokenizer, tmp_path / "cache")
    docs, _ = stream_documents(stream)
    masker = masker or TokenMasker(VocabInfo.from_tokenizer(tokenizer))
    return NSPBatches(docs, 64, tokenizer.cls_token_id, tokenizer.sep_token_id,
                      tokenizer.pad_token_id, 8, masker, seed=3, short_seq_prob=short_seq_prob)


def test_nsp_batches_segments_padding_and_masking(corpus, tokenizer, tmp_path):
    src = _batches(corpus, tokenizer, tmp_path)
    unmasked = _batches(corpus, tokenizer, tmp_path, masker=lambda ids, g: type(
        "M", (), {"input_ids": ids, "labels": torch.full_like(ids, IGNORE)})())
    n = src.num_batches(0)
    assert n == unmasked.num_batches(0) > 5
    widths, labels = [], []
    for batch, raw in zip(src.iter_batches(0), unmasked.iter_batches(0)):
        ids, types, mask = raw["input_ids"], batch["token_type_ids"], batch["attention_mask"]
        assert ids.shape == batch["input_ids"].shape == types.shape == batch["labels"].shape
        lengths = mask.sum(1)
        assert int(lengths.max()) == ids.shape[1] <= 64  # padded only to the longest pair
        widths.append(ids.shape[1])
        labels += batch["next_sentence_label"].tolist()
        for row in range(len(ids)):
            seps = torch.nonzero(ids[row] == tokenizer.sep_token_id).squeeze(1)
            n_real = int(lengths[row])
            assert ids[row, 0] == tokenizer.cls_token_id and seps.tolist()[-1] == n_real - 1
            assert len(seps) == 2
            assert (types[row, :seps[0] + 1] == 0).all() and (types[row, seps[0] + 1:n_real] == 1).all()
            assert (types[row, n_real:] == 0).all() and (ids[row, n_real:] == tokenizer.pad_token_id).all()
        special = (ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id) | (mask == 0)
        picked = batch["labels"] != IGNORE
        assert picked.any() and not (picked & special).any()
        assert torch.equal(batch["labels"][picked], ids[picked])
        assert torch.equal(batch["input_ids"][special], ids[special])
    assert min(widths) < 40  # length grouping leaves short batches short
    assert 0.35 < np.mean(labels) < 0.75  # one-sentence chunks are always random-next
    again = list(src.iter_batches(0, start=n - 2))
    first = list(_batches(corpus, tokenizer, tmp_path).iter_batches(0))
    assert all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(again, first[-2:]))
    other = next(iter(src.iter_batches(1)))
    assert not torch.equal(other["input_ids"][:, :5], first[0]["input_ids"][:, :5])


def test_pretrain_with_nsp_trains_and_saves_the_nsp_head(corpus, tiny_encoder, tmp_path, tokenizer):
    run = tmp_path / "run"
    res = pretrain(_cfg(corpus, tiny_encoder, run, valid=str(corpus), eval_steps=4,
                        max_eval_sequences=8))
    assert res["nsp"] and set(res["train"]) == {"loss", "mlm_loss", "nsp_loss"}
    assert res["documents"] == 8 and not res["pseudo_documents"]
    assert all(np.isfinite(v) for v in res["train"].values())
    assert res["train"]["loss"] == pytest.approx(res["train"]["mlm_loss"] + res["train"]["nsp_loss"])
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert sum("nsp_loss" in r for r in records if r["type"] == "train") == 4
    config = json.loads((run / "model" / "config.json").read_text())
    assert config["architectures"] == ["BertForPreTraining"]
    assert json.loads((run / "model" / "bertkit.json").read_text())["nsp"] is True

    from bertkit.tasks.pretrain.model import build_pretrain_model

    ours, info = build_pretrain_model(str(run / "model"), None, tokenizer, sbo=False,
                                      sbo_weight=1.0, nsp=True)
    assert not info["new_nsp_head"] and not info["new_pooler"] and not info["new_mlm_head"]
    loaded = AutoModelForPreTraining.from_pretrained(run / "model").eval()
    assert type(loaded).__name__ == "BertForPreTraining"
    assert torch.equal(loaded.cls.seq_relationship.weight, ours.mlm.cls.seq_relationship.weight)
    fresh, _ = build_pretrain_model(tiny_encoder, None, tokenizer, sbo=False, sbo_weight=1.0,
                                    nsp=True)
    assert not torch.equal(loaded.cls.seq_relationship.weight, fresh.mlm.cls.seq_relationship.weight)
    ids = tokenizer("the protein [MASK] inhibitor", "stat3 in rats", return_tensors="pt")
    with torch.no_grad():
        out = loaded(**ids)
        ours.eval()
        ref = ours(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"],
                   token_type_ids=ids["token_type_ids"], labels=ids["input_ids"],
                   next_sentence_label=torch.tensor([0]))
        assert torch.allclose(out.seq_relationship_logits, ref["nsp_logits"], atol=1e-5)
        mlm = AutoModelForMaskedLM.from_pretrained(run / "model").eval()
        assert torch.allclose(mlm(**ids).logits, out.prediction_logits, atol=1e-5)


def test_nsp_refuses_span_masking_and_sbo(corpus, tiny_encoder, tmp_path):
    with pytest.raises(BertkitError, match="SpanBERT dropped NSP"):
        pretrain(_cfg(corpus, tiny_encoder, tmp_path / "a", masking="span"))
    with pytest.raises(BertkitError, match="short-seq-prob"):
        pretrain(_cfg(corpus, tiny_encoder, tmp_path / "b", short_seq_prob=1.5))
    result = CliRunner().invoke(app, ["pretrain", "--corpus", str(corpus), "--model", tiny_encoder,
                                      "--nsp", "--masking", "span", "--output-dir",
                                      str(tmp_path / "c")])
    assert result.exit_code != 0 and "SpanBERT dropped NSP" in result.output
    assert not (tmp_path / "c").exists()


class Killed(Exception):
    pass


def test_nsp_resume_gives_the_same_losses(corpus, tiny_encoder, tmp_path, monkeypatch):
    def records(run):
        return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()
                if json.loads(x)["type"] == "train"]

    kw = dict(masking="wwm", max_steps=5, save_steps=2)
    pretrain(_cfg(corpus, tiny_encoder, tmp_path / "full", **kw))
    real_iter, seen = NSPBatches.iter_batches, {"n": 0}

    def dying(self, epoch, start=0):
        for batch in real_iter(self, epoch, start):
            if seen["n"] == 3:  # after the checkpoint at step 2
                raise Killed
            seen["n"] += 1
            yield batch

    monkeypatch.setattr(NSPBatches, "iter_batches", dying)
    with pytest.raises(Killed):
        pretrain(_cfg(corpus, tiny_encoder, tmp_path / "cut", **kw))
    monkeypatch.setattr(NSPBatches, "iter_batches", real_iter)
    pretrain(_cfg(corpus, tiny_encoder, tmp_path / "cut", resume=True, **kw))
    a, b = records(tmp_path / "full"), records(tmp_path / "cut")
    assert [r["step"] for r in b] == list(range(1, 6))
    for key in ("loss", "mlm_loss", "nsp_loss"):
        assert [r[key] for r in a] == [r[key] for r in b]


def test_nsp_cuts_a_paragraph_a_line_corpus_into_sentences(tmp_path, tiny_encoder, tokenizer):
    """Issue 45, kind 8 (transformers#12188): lines of several sentences, longer than half a
    pair, are cut into sentences, so pairs do not truncate them away."""
    from bertkit.tasks.pretrain.data import tokenize_corpus
    from bertkit.tasks.pretrain.nsp import epoch_pairs, stream_documents

    rng = __import__("random").Random(0)
    words = "the protein kinase inhibitor reduced phosphorylation in rats treated".split()
    sentence = lambda: " ".join(rng.choice(words) for _ in range(rng.randint(6, 10))) + " ."
    docs = ["\n".join(" ".join(sentence() for _ in range(6)) for _ in range(4))
            for _ in range(12)]
    corpus = tmp_path / "paragraphs.txt"
    corpus.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    cfg = _cfg(corpus, tiny_encoder, tmp_path / "run", max_seq_length=64)
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    results = pretrain(cfg, Console(file=out, width=300))
    assert results["nsp_lines_cut"] == 48  # every line: 6 sentences of ~10 pieces > 30
    assert "48 corpus line(s) longer than 30 pieces" in out.getvalue()
    stream = tokenize_corpus([str(corpus)], tokenizer, tmp_path / "cache")
    whole_lines = len(epoch_pairs(stream_documents(stream)[0], 64, 101, 102, 42, 0))
    assert results["sequences"] > 1.5 * whole_lines  # lines cut off pairs before
