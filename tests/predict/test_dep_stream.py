"""``predict dep`` streams: the same CoNLL-U as the whole-file path, shards merge to the unsharded
output, a killed and resumed run gives the same bytes, every input line has its block."""

from __future__ import annotations

import gzip

import pytest

from bertkit.errors import BertkitError
from bertkit.predict import StreamOptions, shard_output, stream_predict
from bertkit.predict.merge import merge_shards
from bertkit.tasks.dep.stream import dep_predictor
from bertkit.tasks.dep.task import predict_dep

from tests.predict.conftest import WORDS, crash_after
from tests.tasks.dep.conftest import SENTS


@pytest.fixture(scope="module")
def dep_model(tmp_path_factory, tiny_encoder, tokenizer) -> str:
    import torch

    from bertkit.tasks.dep.model import build_parser

    torch.manual_seed(2)
    parser = build_parser(tiny_encoder, ["compound", "dobj", "nsubj", "punct", "root"],
                          arc_mlp=16, rel_mlp=8)
    path = tmp_path_factory.mktemp("dep-model")
    parser.save(path, tokenizer, {"max_length": 64, "base_model": tiny_encoder, "data": "test"})
    return str(path)


def _conllu(path, n):
    path.write_text("\n".join(SENTS[i % 3] for i in range(n)) + "\n", encoding="utf-8")
    return path


def _pred(model, inp, **kw):
    return dep_predictor(model, str(inp), device="cpu", batch_size=3, **kw)


def test_dep_stream_matches_whole_file_and_shards_merge(tmp_path, dep_model):
    inp = _conllu(tmp_path / "in.conllu", 20)
    whole = tmp_path / "whole.conllu"
    stream_predict(_pred(dep_model, inp), str(inp), whole, StreamOptions(chunk_size=3))
    assert whole.read_text() == predict_dep(dep_model, str(inp), device="cpu")
    out = tmp_path / "out.conllu"
    for i in (1, 2):
        stream_predict(_pred(dep_model, inp), str(inp), shard_output(out, (i, 2)),
                       StreamOptions(chunk_size=3, shard=(i, 2)))
    assert merge_shards(out)["chunks"] == 7 and out.read_bytes() == whole.read_bytes()


def test_dep_stream_resumes_to_the_same_bytes(tmp_path, dep_model):
    inp = tmp_path / "in.txt.gz"
    lines = [" ".join(WORDS[i % 5:i % 5 + 2 + i % 6]) if i % 6 != 4 else "" for i in range(25)]
    inp.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    whole = tmp_path / "whole.conllu.gz"
    stream_predict(_pred(dep_model, inp), str(inp), whole, StreamOptions(chunk_size=4))
    out = tmp_path / "out.conllu.gz"
    pred = _pred(dep_model, inp)
    crash_after(pred, 3)
    with pytest.raises(BertkitError, match="stopped"):
        stream_predict(pred, str(inp), out, StreamOptions(chunk_size=4))
    stream_predict(_pred(dep_model, inp), str(inp), out, StreamOptions(chunk_size=4, resume=True))
    assert out.read_bytes() == whole.read_bytes()
    blocks = gzip.decompress(whole.read_bytes()).decode().rstrip("\n").split("\n\n")
    assert len(blocks) == 25 and blocks[4] == "# line 5: empty"  # one block an input line
    assert blocks[0].startswith("# text = " + lines[0] + "\n1\t")


def test_dep_stream_skips_a_malformed_sentence_with_a_marker(tmp_path, dep_model):
    bad = SENTS[0].replace("3\tIL-2", "7\tIL-2")  # word id out of sequence, on line 5
    inp = tmp_path / "in.conllu"
    inp.write_text("\n".join([SENTS[1], bad, SENTS[2]]) + "\n", encoding="utf-8")
    with pytest.raises(BertkitError,
                       match=r"in.conllu:7: line 11: word id 7 out of sequence \(sentence"):
        stream_predict(_pred(dep_model, inp), str(inp), tmp_path / "a.conllu")
    out = tmp_path / "b.conllu"
    summary = stream_predict(_pred(dep_model, inp), str(inp), out,
                             StreamOptions(skip_bad_lines=True))
    assert summary.skipped == [[7, "line 11: word id 7 out of sequence (sentence sent_id=a)"]]
    blocks = out.read_text().rstrip("\n").split("\n\n")
    assert blocks[1] == \
        "# line 7: skipped: line 11: word id 7 out of sequence (sentence sent_id=a)"
    assert blocks[0].startswith("# sent_id = b") and blocks[2].startswith("# sent_id = c")
    again = tmp_path / "again.conllu"  # the output parses again, the marker passed through
    stream_predict(_pred(dep_model, out), str(out), again)
    assert again.read_text().split("\n\n")[1] == blocks[1]
