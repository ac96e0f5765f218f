import gzip

import numpy as np
import pytest
import torch

from bertkit.masking import mask_capacity

from bertkit.errors import BertkitError
from bertkit.masking import build_masker, VocabInfo
from bertkit.tasks.pretrain.batches import PretrainBatches
from bertkit.tasks.pretrain.data import PackedSequences, tokenize_corpus


def test_tokenised_stream_has_document_breaks_and_is_cached(tmp_path, tokenizer):
    text = "Aspirin induced renal failure .\nCisplatin causes nephrotoxicity .\n\n\nSecond document here .\n"
    (tmp_path / "c.txt").write_text(text, encoding="utf-8")
    s = tokenize_corpus([tmp_path / "c.txt"], tokenizer, tmp_path / "cache")
    expected = (tokenizer("Aspirin induced renal failure . Cisplatin causes nephrotoxicity .",
                          add_special_tokens=False)["input_ids"] + [tokenizer.sep_token_id]
                + tokenizer("Second document here .", add_special_tokens=False)["input_ids"]
                + [tokenizer.sep_token_id])
    assert s.ids.tolist() == expected and s.documents == 2 and not s.cached
    assert s.unigram.sum() == len(expected) - 2 and s.unigram[tokenizer.sep_token_id] == 0
    again = tokenize_corpus([tmp_path / "c.txt"], tokenizer, tmp_path / "cache")
    assert again.cached and again.ids.tolist() == expected
    with gzip.open(tmp_path / "c.txt.gz", "wt", encoding="utf-8") as fh:
        fh.write(text)
    gz = tokenize_corpus([tmp_path / "c.txt.gz"], tokenizer, tmp_path / "cache")
    assert gz.ids.tolist() == expected and not gz.cached  # another file, another cache entry


def test_long_lines_are_not_truncated_or_padded(tmp_path, tokenizer):
    line = " ".join(["phosphorylation"] * 400)
    (tmp_path / "c.txt").write_text(line + "\nshort .\n", encoding="utf-8")
    s = tokenize_corpus([tmp_path / "c.txt"], tokenizer, tmp_path / "cache")
    n = len(tokenizer(line, add_special_tokens=False)["input_ids"])
    assert n > 512 and len(s.ids) == n + 2 + 1 and tokenizer.pad_token_id not in s.ids.tolist()


def test_bad_utf8_names_file_and_line(tmp_path, tokenizer):
    (tmp_path / "c.txt").write_bytes(b"fine line\nbad \xff byte\n")
    with pytest.raises(BertkitError, match=r"c.txt:2: not valid UTF-8"):
        tokenize_corpus([tmp_path / "c.txt"], tokenizer, tmp_path / "cache")


def test_packing_gives_full_sequences_without_padding(corpus, tmp_path, tokenizer):
    s = tokenize_corpus([corpus], tokenizer, tmp_path / "cache")
    seqs = PackedSequences(s, 32, tokenizer.cls_token_id, tokenizer.sep_token_id)
    assert len(seqs) == len(s.ids) // 30
    x = seqs.get(np.arange(len(seqs)))
    assert x.shape == (len(seqs), 32)
    assert (x[:, 0] == tokenizer.cls_token_id).all() and (x[:, -1] == tokenizer.sep_token_id).all()
    assert (x != tokenizer.pad_token_id).all()
    assert x[:, 1:-1].flatten().tolist() == s.ids[:len(seqs) * 30].tolist()


def test_batches_are_reproducible_per_epoch_and_resumable(corpus, tmp_path, tokenizer):
    s = tokenize_corpus([corpus], tokenizer, tmp_path / "cache")
    seqs = PackedSequences(s, 32, tokenizer.cls_token_id, tokenizer.sep_token_id)
    masker = build_masker("span", VocabInfo.from_tokenizer(tokenizer, s.unigram))
    src = PretrainBatches(seqs, 8, masker, seed=3, sbo=True)
    full = list(src.iter_batches(1))
    tail = list(src.iter_batches(1, start=2))
    assert len(full) == src.num_batches(1) and len(tail) == len(full) - 2
    for a, b in zip(full[2:], tail):
        assert all(torch.equal(a[k], b[k]) for k in a)
    other = next(src.iter_batches(2))
    assert not torch.equal(full[0]["mlm_labels"], other["mlm_labels"])  # new masks per epoch
    # full rows: no attention mask; masked positions at a fixed count per row (static shapes)
    assert set(full[0]) == {"input_ids", "mlm_positions", "mlm_labels", "sbo_boundaries"}
    B, T = full[0]["input_ids"].shape
    assert {tuple(b["mlm_positions"].shape) for b in full[:-1]} == {(B, mask_capacity(T, 0.15))}
    assert all(((b["mlm_labels"] != -100).sum(1) >= 1).all() for b in full)
    b = full[0]["sbo_boundaries"]
    assert b.shape == (*full[0]["input_ids"].shape, 2)  # row-first: a process can take a slice


def test_a_process_slice_of_a_batch_keeps_exactly_its_rows_sbo_targets(corpus, tmp_path, tokenizer, monkeypatch):
    from bertkit.training.distributed import shard_batch

    s = tokenize_corpus([corpus], tokenizer, tmp_path / "cache")
    seqs = PackedSequences(s, 32, tokenizer.cls_token_id, tokenizer.sep_token_id)
    masker = build_masker("span", VocabInfo.from_tokenizer(tokenizer, s.unigram))
    batch = next(PretrainBatches(seqs, 8, masker, seed=0, sbo=True).iter_batches(0))
    whole = batch["sbo_boundaries"]
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    part = shard_batch(batch, 8)
    assert part["input_ids"].shape[0] == 4 and part["sbo_boundaries"].shape[0] == 4
    mine = part["sbo_boundaries"]
    assert (mine >= 0).any() and torch.equal(mine, whole[4:])
