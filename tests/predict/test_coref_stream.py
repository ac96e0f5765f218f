"""``predict coref`` streams a document a record: the same bytes as the whole-file path for
CoNLL-2012, JSON lines and plain text; shards merge to the unsharded output; a killed run resumes
to the same file; a malformed document stops the run (file and line named, the documents before
it kept) or, with ``--skip-bad-lines``, is skipped and counted."""

from __future__ import annotations

import gzip
import json

import pytest

from bertkit.errors import BertkitError
from bertkit.predict import StreamOptions, shard_output, stream_predict
from bertkit.predict.merge import merge_shards
from bertkit.tasks.coref.stream import coref_predictor
from bertkit.tasks.coref.task import predict_coref

from tests.predict.conftest import crash_after

from tests.tasks.coref.conftest import _SENTS, document

TEXTS = ["Anna met her brother in Paris. She smiled and he waved.",
         "Tom saw the dog. It barked at him.\n\nThe old city was quiet.",
         "The dog and the old city. Anna saw it.", "He waved."]


@pytest.fixture(scope="module")
def coref_model(tmp_path_factory, tiny_encoder, tokenizer) -> str:
    import torch

    from bertkit.tasks.coref.model import build_model

    torch.manual_seed(3)
    model = build_model(tiny_encoder, 16, 4, 0.0, 0.4)
    path = tmp_path_factory.mktemp("coref-model")
    model.save(path, tokenizer, {"max_length": 12, "base_model": tiny_encoder, "data": "test",
                                 "singletons": "on"})
    return str(path)


def _conll(path, names="abcdefg"):
    docs = [document(n, _SENTS[k % 5:] + _SENTS[:k % 5]) for k, n in enumerate(names)]
    path.write_text("".join(docs), encoding="utf-8")
    return path


def _jsonl(path, n=7, bad_at=None):
    lines = [json.dumps({"id": f"d{k}", "text": TEXTS[k % 4]}) for k in range(n)]
    lines[2] = json.dumps({"text": TEXTS[2]})  # no id: doc2, its 0-based line number
    if bad_at is not None:
        lines[bad_at - 1] = '{"id": "x", "text": "unterminated'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pred(model, inp, **kw):
    return coref_predictor(model, str(inp), device="cpu", **kw)


def _stream(model, inp, out, chunk=2, pred_kw=None, **opts):
    return stream_predict(_pred(model, inp, **(pred_kw or {})), str(inp), out,
                          StreamOptions(chunk_size=chunk, **opts))


@pytest.mark.parametrize("fmt", ["conll", "jsonl"])
def test_conll2012_streams_the_whole_file_output_and_shards_merge(tmp_path, coref_model, fmt):
    inp = _conll(tmp_path / "in.conll")
    whole = predict_coref(coref_model, str(inp), output_format=fmt, device="cpu")
    assert whole.count("#begin document") == 7 if fmt == "conll" else len(whole.splitlines()) == 7
    assert "(0)" in whole or '"start"' in whole  # the random model finds mentions
    out = tmp_path / "out.txt"
    summary = _stream(coref_model, inp, out, pred_kw={"output_format": fmt})
    assert summary.records == 7 and out.read_text(encoding="utf-8") == whole
    sharded = tmp_path / "sharded.txt"
    for i in (1, 2):
        _stream(coref_model, inp, shard_output(sharded, (i, 2)), shard=(i, 2),
                pred_kw={"output_format": fmt})
    assert merge_shards(sharded)["chunks"] == 4
    assert sharded.read_bytes() == out.read_bytes()


def test_jsonl_and_text_stream_the_whole_file_output_gz_too(tmp_path, coref_model):
    inp = _jsonl(tmp_path / "in.jsonl")
    whole = predict_coref(coref_model, str(inp), device="cpu")
    assert [json.loads(x)["id"] for x in whole.splitlines()] == \
        ["d0", "d1", "doc2", "d3", "d4", "d5", "d6"]
    gz = tmp_path / "in.jsonl.gz"
    gz.write_bytes(gzip.compress(inp.read_bytes()))
    out = tmp_path / "out.jsonl.gz"
    _stream(coref_model, gz, out, chunk=3, pred_kw={"output": str(out)})
    assert gzip.decompress(out.read_bytes()).decode() == whole
    conll = predict_coref(coref_model, str(inp), output_format="conll", device="cpu")
    _stream(coref_model, inp, tmp_path / "out.conll", pred_kw={"output_format": "conll"})
    assert (tmp_path / "out.conll").read_text(encoding="utf-8") == conll
    story = tmp_path / "story.txt"  # the whole file one document, blank lines inside it
    story.write_bytes("\ufeff".join(["", "\r\n\r\n".join(TEXTS)]).encode())
    for fmt in ("jsonl", "conll"):
        whole = predict_coref(coref_model, str(story), output_format=fmt, device="cpu")
        out = tmp_path / f"story.{fmt}"
        assert _stream(coref_model, story, out, pred_kw={"output_format": fmt}).records == 1
        assert out.read_text(encoding="utf-8") == whole
    assert json.loads(whole if fmt == "jsonl" else out.with_suffix(".jsonl").read_text()
                      )["text"] == "\n\n".join(TEXTS)


def test_a_killed_run_resumes_to_the_same_file(tmp_path, coref_model):
    inp = _conll(tmp_path / "in.conll")
    whole = tmp_path / "whole.conll"
    _stream(coref_model, inp, whole)
    out = tmp_path / "out.conll"
    pred = _pred(coref_model, inp)
    crash_after(pred, 2)
    with pytest.raises(BertkitError, match="stopped .* after 4 records"):
        stream_predict(pred, str(inp), out, StreamOptions(chunk_size=2))
    part = tmp_path / "out.conll.part"
    assert part.read_text(encoding="utf-8").count("#end document") == 4 and not out.exists()
    assert _stream(coref_model, inp, out, resume=True).records == 7
    assert out.read_bytes() == whole.read_bytes() and not part.exists()


def _unbalanced(t):  # doc c: "her" opens entity 1, "brother" no longer closes it
    return t.replace("c\t0\t3\tbrother\t_\t1)", "c\t0\t3\tbrother\t_\t")


def _unended(t):  # doc c loses its #end document line: it ends where d begins
    i = t.index("#begin document (d)")
    return t[:i].rstrip("\n").rsplit("\n", 1)[0] + "\n" + t[i:]


@pytest.mark.parametrize("edit, message", [
    (_unbalanced, r"line {her}: mention of entity 1 opened here is never closed"),
    (_unended, r"document 'c; part 0' has no #end document line"),
])
def test_a_bad_document_midway_stops_keeps_and_resumes_with_skip(tmp_path, coref_model, edit,
                                                                  message):
    inp = _conll(tmp_path / "in.conll")
    lines = inp.read_text(encoding="utf-8").splitlines()
    at = lines.index("#begin document (c); part 0") + 1
    her = lines.index("c\t0\t2\ther\t_\t(1|(0)") + 1
    assert (at, her) == (73, 95)
    message = message.format(her=her)
    inp.write_text(edit(inp.read_text(encoding="utf-8")), encoding="utf-8")
    out = tmp_path / "out.conll"
    with pytest.raises(BertkitError, match=rf"in.conll:{at}: {message}") as err:
        _stream(coref_model, inp, out)
    assert "the 2 records before it are written" in str(err.value)
    with pytest.raises(BertkitError, match=r"in.conll:\d+: "):  # the whole-file path refuses it
        predict_coref(coref_model, str(inp), device="cpu")
    part = tmp_path / "out.conll.part"
    assert part.read_text(encoding="utf-8").count("#end document") == 2
    summary = _stream(coref_model, inp, out, resume=True, skip_bad_lines=True)
    assert summary.records == 7 and [x[0] for x in summary.skipped] == [at]
    good = tmp_path / "good.conll"  # the input less document c
    text = _conll(tmp_path / "all.conll").read_text(encoding="utf-8")
    c, d = text.index("#begin document (c)"), text.index("#begin document (d)")
    good.write_text(text[:c] + text[d:], encoding="utf-8")
    expect = predict_coref(coref_model, str(good), device="cpu")
    got = out.read_text(encoding="utf-8")
    skip = f"# line {at}: skipped: {summary.skipped[0][1]}\n"
    assert got.count(skip) == 1 and got.replace(skip, "") == expect
    again = predict_coref(coref_model, str(out), device="cpu")  # the marker reads as a comment
    assert again == expect


def test_a_bad_json_line_stops_and_skip_bad_lines_counts_it(tmp_path, coref_model):
    inp = _jsonl(tmp_path / "in.jsonl", bad_at=4)
    out = tmp_path / "out.jsonl"
    with pytest.raises(BertkitError, match=r"in.jsonl:4: not JSON \(Unterminated string"):
        _stream(coref_model, inp, out)
    assert len((tmp_path / "out.jsonl.part").read_text(encoding="utf-8").splitlines()) == 3
    summary = _stream(coref_model, inp, out, resume=True, skip_bad_lines=True)
    assert [x[0] for x in summary.skipped] == [4]
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert rows[3] == {"line": 4, "skipped": summary.skipped[0][1]}
    assert [r["id"] for r in rows if "id" in r] == ["d0", "d1", "doc2", "d4", "d5", "d6"]


def test_stray_lines_and_a_text_without_words_are_bad_records(tmp_path, coref_model):
    inp = tmp_path / "in.conll"
    inp.write_text(document("a") + "x\t0\t0\tHello\t-\n\n" + document("b"), encoding="utf-8")
    with pytest.raises(BertkitError, match=r"in.conll:37: token line outside a document"):
        _stream(coref_model, inp, tmp_path / "out.conll")
    summary = _stream(coref_model, inp, tmp_path / "out.conll", skip_bad_lines=True)
    assert summary.records == 3 and summary.skipped == [[37, "token line outside a document"]]
    empty = tmp_path / "empty.txt"
    empty.write_text(" \n\n", encoding="utf-8")
    with pytest.raises(BertkitError, match=r"empty.txt:1: empty document \(no words\)"):
        _stream(coref_model, empty, tmp_path / "empty.jsonl")
    assert not (tmp_path / "empty.jsonl.part").exists()


def test_a_shard_with_no_chunk_of_a_short_input_still_merges(tmp_path, coref_model):
    story = tmp_path / "story.txt"  # one record: shard 2/2 owns no chunk
    story.write_text(TEXTS[0], encoding="utf-8")
    whole = tmp_path / "whole.jsonl"
    _stream(coref_model, story, whole, pred_kw={"output": str(whole)})
    out = tmp_path / "out.jsonl"
    done = [_stream(coref_model, story, shard_output(out, (i, 2)), shard=(i, 2),
                    pred_kw={"output": str(out)}).records for i in (1, 2)]
    assert done == [1, 0] and merge_shards(out)["chunks"] == 1
    assert out.read_bytes() == whole.read_bytes() and json.loads(whole.read_text())["id"] == "story"
