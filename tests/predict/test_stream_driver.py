"""The streaming driver with a saved tiny NER model: output identical to the whole-file path,
resume after a crash gives the same bytes, shards merge to the unsharded file, bad lines."""

from __future__ import annotations

import gzip
import io
import os
import json

import pytest

from bertkit.data.conll import format_conll, read_text
from bertkit.errors import BertkitError
from bertkit.predict import StreamOptions, shard_output, stream_predict
from bertkit.predict.merge import merge_shards
from bertkit.predict.state import load_state, part_path, state_path
from bertkit.tasks.ner.task import stream_ner, tag_sentences

from tests.predict.conftest import crash_after, text_input


def _pred(model, inp, fmt="conll", **kw):
    return stream_ner(model, str(inp), fmt, device="cpu", batch_size=4, **kw)


def test_stream_matches_the_whole_file_path(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 60)
    pred = _pred(ner_model, inp)
    out = io.StringIO()
    stream_predict(pred, str(inp), out, StreamOptions(chunk_size=7))
    # the path predict ner took before streaming: read all, tag all, format all
    from bertkit.tasks.ner.model import load_tagger
    from bertkit.encoders import load_tokenizer
    from bertkit.training.devices import make_runtime

    tagger, meta = load_tagger(ner_model)
    tok = load_tokenizer(meta["path"])
    sents = read_text(inp, tok.backend_tokenizer.pre_tokenizer.pre_tokenize_str)
    tags = tag_sentences(tagger, tok, sents, make_runtime("cpu", "auto"), 64, 32)
    # every 7th line is blank: its own block, "# line N: empty", where the old path had none
    blocks = out.getvalue().split("\n\n")
    assert len(blocks) == 60 and blocks[6] == "# line 7: empty" and blocks[13] == "# line 14: empty"
    assert "\n\n".join(b for b in blocks if not b.startswith("# line ")) == \
        format_conll(sents, tags).rstrip("\n") + "\n"
    assert len(sents) == 60 - 60 // 7


class Crash(RuntimeError):
    pass


@pytest.mark.parametrize("name,fmt", [("out.conll", "conll"), ("out.jsonl.gz", "jsonl")])
def test_resume_after_a_crash_gives_the_same_bytes(tmp_path, ner_model, name, fmt):
    inp = text_input(tmp_path / "in.txt", 50)
    whole = tmp_path / "whole" / name
    stream_predict(_pred(ner_model, inp, fmt), str(inp), whole, StreamOptions(chunk_size=6))
    out = tmp_path / name
    with pytest.raises(Crash):
        stream_predict(crash_after(_pred(ner_model, inp, fmt), 4, Crash), str(inp), out,
                       StreamOptions(chunk_size=6))
    state = json.loads(state_path(out).read_text())
    assert state["records"] == 24 and not out.exists() and part_path(out).exists()
    with open(part_path(out), "ab") as f:  # a record half written when the process died
        f.write(b"half a rec")
    with pytest.raises(BertkitError, match="nothing to resume"):
        stream_predict(_pred(ner_model, inp, fmt), str(inp), tmp_path / "other" / name,
                       StreamOptions(chunk_size=6, resume=True))
    summary = stream_predict(_pred(ner_model, inp, fmt), str(inp), out,
                             StreamOptions(chunk_size=6, resume=True))
    assert summary.records == 50 and out.read_bytes() == whole.read_bytes()
    assert summary.this_run == 26  # the rate is of this run's records (helper trial)
    assert not state_path(out).exists() and not part_path(out).exists()
    # --resume once more, on the finished output: said so, the file untouched
    with pytest.raises(BertkitError, match="is already a finished output"):
        stream_predict(_pred(ner_model, inp, fmt), str(inp), out,
                       StreamOptions(chunk_size=6, resume=True))
    assert out.read_bytes() == whole.read_bytes()
    if name.endswith(".gz"):
        lines = gzip.decompress(out.read_bytes()).decode().splitlines()
        assert [json.loads(x)["line"] for x in lines] == list(range(1, 51))


def test_ctrl_c_says_what_is_kept_and_how_to_resume(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 30)
    whole = tmp_path / "whole.conll"
    stream_predict(_pred(ner_model, inp), str(inp), whole, StreamOptions(chunk_size=6))
    pred, out = _pred(ner_model, inp), tmp_path / "out.conll"
    inner, seen = pred.predict, [0]

    def predict(records):  # Ctrl-C while the third chunk is predicted
        seen[0] += 1
        if seen[0] > 2:
            raise KeyboardInterrupt
        return inner(records)

    pred.predict = predict
    with pytest.raises(BertkitError) as err:
        stream_predict(pred, str(inp), out, StreamOptions(chunk_size=6))
    assert err.value.exit_code == 130
    assert "after 12 records" in err.value.message and "--resume" in err.value.message
    assert part_path(out).exists() and state_path(out).exists() and not out.exists()
    stream_predict(_pred(ner_model, inp), str(inp), out, StreamOptions(chunk_size=6, resume=True))
    assert out.read_bytes() == whole.read_bytes()


def test_ctrl_c_before_anything_is_written_leaves_nothing(tmp_path, ner_model):
    inp, out = text_input(tmp_path / "in.txt", 10), tmp_path / "out.conll"
    pred = _pred(ner_model, inp)

    def predict(records):
        raise KeyboardInterrupt

    pred.predict = predict
    with pytest.raises(KeyboardInterrupt):
        stream_predict(pred, str(inp), out, StreamOptions(chunk_size=6))
    assert not part_path(out).exists() and not state_path(out).exists()


def test_resume_refuses_another_input_or_model(tmp_path, ner_model, tiny_encoder, tokenizer):
    inp = text_input(tmp_path / "in.txt", 30)
    out = tmp_path / "out.conll"
    with pytest.raises(Crash):
        stream_predict(crash_after(_pred(ner_model, inp), 1, Crash), str(inp), out,
                       StreamOptions(chunk_size=5))
    stamp = inp.stat().st_mtime_ns
    text_input(inp, 31)  # the input changed
    with pytest.raises(BertkitError, match=r"cannot resume: .*another input \(.*size"):
        stream_predict(_pred(ner_model, inp), str(inp), out, StreamOptions(chunk_size=5,
                                                                             resume=True))
    text_input(inp, 30)
    os.utime(inp, ns=(stamp, stamp))
    with pytest.raises(BertkitError, match=r"other settings \(chunk_size 5 then, 6 now"):
        stream_predict(_pred(ner_model, inp), str(inp), out, StreamOptions(chunk_size=6,
                                                                             resume=True))
    other = tmp_path / "other-model"
    import shutil

    shutil.copytree(ner_model, other)
    with pytest.raises(BertkitError, match="another model"):
        stream_predict(_pred(str(other), inp), str(inp), out, StreamOptions(chunk_size=5,
                                                                              resume=True))


@pytest.mark.parametrize("fmt,name", [("conll", "out.conll"), ("jsonl", "out.jsonl.gz")])
def test_shards_merge_into_the_unsharded_output(tmp_path, ner_model, fmt, name):
    inp = text_input(tmp_path / "in.txt", 47)
    whole = tmp_path / "whole" / name
    stream_predict(_pred(ner_model, inp, fmt), str(inp), whole, StreamOptions(chunk_size=4))
    out = tmp_path / name
    for i in (1, 2, 3):
        stream_predict(_pred(ner_model, inp, fmt), str(inp), shard_output(out, (i, 3)),
                       StreamOptions(chunk_size=4, shard=(i, 3)))
    assert shard_output(out, (2, 3)).name == name.replace("out.", "out.").replace(
        ".gz", "") + ".shard-2-of-3" + (".gz" if name.endswith(".gz") else "")
    shard1 = load_state(state_path(shard_output(out, (1, 3))))
    assert [c for c, _, _ in shard1["chunks"]] == [0, 3, 6, 9]
    merged = merge_shards(out)
    assert merged["chunks"] == 12 and out.read_bytes() == whole.read_bytes()
    assert not shard_output(out, (1, 3)).exists()


def test_merge_refuses_missing_or_unfinished_shards(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 20)
    out = tmp_path / "out.conll"
    stream_predict(_pred(ner_model, inp), str(inp), shard_output(out, (1, 2)),
                   StreamOptions(chunk_size=4, shard=(1, 2)))
    with pytest.raises(BertkitError, match="shard 2 of 2 missing"):
        merge_shards(out)
    with pytest.raises(Crash):
        stream_predict(crash_after(_pred(ner_model, inp), 1, Crash), str(inp),
                       shard_output(out, (2, 2)), StreamOptions(chunk_size=4, shard=(2, 2)))
    with pytest.raises(BertkitError, match="shard 2 of 2 missing"):  # only its .part exists
        merge_shards(out)


def test_merge_names_the_setting_two_shards_differ_in(tmp_path, ner_model):
    """Helper trial: "made with other settings" did not say which."""
    inp = text_input(tmp_path / "in.txt", 20)
    out = tmp_path / "out.conll"
    for i, size in ((1, 4), (2, 5)):
        stream_predict(_pred(ner_model, inp), str(inp), shard_output(out, (i, 2)),
                       StreamOptions(chunk_size=size, shard=(i, 2)))
    with pytest.raises(BertkitError, match=r"other settings than .*\(chunk_size: 4 there, 5 "
                                           r"here\)"):
        merge_shards(out)


def test_a_bad_line_stops_with_everything_before_it_written(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 40, bad_at=23)
    out = tmp_path / "out.jsonl"
    with pytest.raises(BertkitError, match=r"in.txt:23: not valid UTF-8 at byte 3 of the line; "
                                           r"the 22 records before it are written"):
        stream_predict(_pred(ner_model, inp, "jsonl"), str(inp), out, StreamOptions(chunk_size=5))
    written = [json.loads(x) for x in part_path(out).read_text().splitlines()]
    assert [r["line"] for r in written] == list(range(1, 23))
    stream_predict(_pred(ner_model, inp, "jsonl"), str(inp), out,
                   StreamOptions(chunk_size=5, resume=True, skip_bad_lines=True))
    skipping = tmp_path / "skip.jsonl"
    stream_predict(_pred(ner_model, inp, "jsonl"), str(inp), skipping,
                   StreamOptions(chunk_size=5, skip_bad_lines=True))
    assert out.read_bytes() == skipping.read_bytes()
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in rows] == list(range(1, 41))
    assert rows[22] == {"line": 23, "skipped": "not valid UTF-8 at byte 3 of the line"}


def test_token_budget_batches_give_the_same_predictions(tmp_path, ner_model):
    import numpy as np

    from bertkit.predict.inference import token_batches

    lengths = np.array([5, 40, 7, 7, 12, 3])
    batches = token_batches(lengths, 36)
    assert [b.tolist() for b in batches] == [[1], [4, 2, 3], [0, 5]]  # 40; 3 x 12; 2 x 5
    assert sorted(np.concatenate(batches).tolist()) == list(range(6))
    inp = text_input(tmp_path / "in.txt", 80)
    texts = {}
    for name, kw in (("count", {}), ("tokens", {"batch_tokens": 100})):
        out = io.StringIO()
        stream_predict(_pred(ner_model, inp, "jsonl", **kw), str(inp), out,
                       StreamOptions(chunk_size=40))
        texts[name] = out.getvalue()
    assert texts["tokens"] == texts["count"] and len(texts["count"].splitlines()) == 80


def test_a_bad_first_line_leaves_nothing_behind_and_points_to_skipping(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 10, bad_at=1)
    out = tmp_path / "out.conll"
    with pytest.raises(BertkitError, match=r"in.txt:1: not valid UTF-8 .*; --skip-bad-lines "
                                           r"skips such lines"):
        stream_predict(_pred(ner_model, inp), str(inp), out, StreamOptions(chunk_size=4))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_an_input_without_records_says_what_the_task_expects(tmp_path, ner_model):
    inp = tmp_path / "empty.txt"
    inp.write_bytes(b"")
    pred = _pred(ner_model, inp)
    with pytest.raises(BertkitError, match="no text found") as err:
        stream_predict(pred, str(inp), tmp_path / "out.conll", StreamOptions(chunk_size=4))
    assert pred.expected in str(err.value) and "empty.txt" in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.txt"]


def test_heap_released_after_every_chunk(tmp_path, ner_model, monkeypatch):
    """The driver trims the C heap once a chunk is written (RSS flat between chunks), and
    ``release_memory`` runs on this platform without error."""
    from bertkit.predict import driver

    driver.release_memory()  # glibc's malloc_trim where there is one, else nothing
    calls = []
    monkeypatch.setattr(driver, "release_memory", lambda: calls.append(1))
    inp = text_input(tmp_path / "in.txt", 20)
    stream_predict(_pred(ner_model, inp), str(inp), io.StringIO(), StreamOptions(chunk_size=6))
    assert len(calls) == 4  # 20 records in chunks of 6: 6, 6, 6, 2


def test_a_second_run_onto_a_live_output_is_refused_and_the_first_finishes(tmp_path, ner_model):
    """Helper trial: two ``predict`` runs on one -o: the second replaced the first's live
    ``.part`` and the first died in ``os.replace`` (FileNotFoundError). Now the second is
    refused at once (naming the first's process) and the first's output is whole."""
    inp = text_input(tmp_path / "in.txt", 30)
    out = tmp_path / "out.conll"
    reference = io.StringIO()
    stream_predict(_pred(ner_model, inp), str(inp), reference, StreamOptions(chunk_size=7))
    pred, refused = _pred(ner_model, inp), []
    inner = pred.predict

    def predict(records):  # while the first run is inside its first chunk, start a second
        if not refused:
            with pytest.raises(BertkitError) as err:
                stream_predict(_pred(ner_model, inp), str(inp), str(out),
                               StreamOptions(chunk_size=7))
            refused.append(str(err.value))
        return inner(records)

    pred.predict = predict
    stream_predict(pred, str(inp), str(out), StreamOptions(chunk_size=7))
    assert f"another bertkit predict (process {os.getpid()}) is writing" in refused[0]
    assert out.read_text() == reference.getvalue()
    assert not part_path(out).exists() and not state_path(out).exists()
    assert not (tmp_path / "out.conll.lock").exists()


def test_the_output_lock_covers_jobs_and_merge_and_skips_file_systems_without_flock(
        tmp_path, monkeypatch):
    """Review: ``--jobs`` and ``predict merge`` hold the whole output's lock too; a file system
    without ``flock`` (ENOLCK) runs unlocked instead of claiming another run holds it."""
    import errno
    import fcntl

    from typer.testing import CliRunner

    from bertkit.cli import app
    from bertkit.predict.state import output_lock

    out = tmp_path / "out.conll"
    with output_lock(out):
        res = CliRunner().invoke(app, ["predict", "merge", str(out)])
        assert res.exit_code == 1 and f"(process {os.getpid()}) is writing" in \
            " ".join(res.output.split())
    assert not (tmp_path / "out.conll.lock").exists()
    res = CliRunner().invoke(app, ["predict", "merge", str(tmp_path / "none" / "out.conll")])
    assert res.exit_code == 1 and "no shard outputs found" in res.output
    assert not (tmp_path / "none").exists()  # a failed merge creates no folder

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    with output_lock(out) as path:  # unlocked, no error
        assert path.name == "out.conll.lock"
