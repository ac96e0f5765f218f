"""A ``.gz`` input cut off before its end (an interrupted download): the file, the line reached
and the cause, exit 1, the records before it kept, and ``--resume`` once the file is whole
(issue 66, kind 9; before, the decompressor's EOFError ended ``predict`` as a bare "Aborted.")."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.predict.records import InputCutOff, iter_records
from bertkit.predict.state import load_state, part_path, state_path
from tests.predict.conftest import text_input

runner = CliRunner()


def _cut_gz(tmp_path, n=400):
    """A whole ``.gz`` of ``n`` lines and the same file cut to 60 % of its bytes, with the
    number of lines the cut one holds whole."""
    plain = text_input(tmp_path / "in.txt", n).read_bytes()
    whole = gzip.compress(plain, mtime=0)
    cut = whole[:len(whole) * 6 // 10]
    d = gzip.GzipFile(fileobj=io.BytesIO(cut))
    got = b""
    try:
        while chunk := d.read(1):
            got += chunk
    except EOFError:
        pass
    return whole, cut, got.count(b"\n")


def test_records_of_a_cut_gz_end_with_the_line_reached(tmp_path):
    whole, cut, full_lines = _cut_gz(tmp_path)
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(cut)
    seen = []
    with pytest.raises(InputCutOff) as err:
        for rec in iter_records(path, "text"):
            seen.append(rec)
    assert 0 < len(seen) <= full_lines < 400
    assert err.value.line == len(seen) + 1 and err.value.file == str(path)
    assert "cut off" in err.value.message and "EOFError" in err.value.message


def _cut_input(tmp_path, ner_model):
    """The whole gzip bytes, the cut input written, the output and the predict command."""
    whole, cut, _ = _cut_gz(tmp_path)
    inp = tmp_path / "in.txt.gz"
    inp.write_bytes(cut)
    out = tmp_path / "out.jsonl"
    args = ["predict", "ner", "-m", ner_model, "-i", str(inp), "-o", str(out), "-f", "jsonl",
            "--device", "cpu", "-b", "4", "--chunk-size", "16"]
    return whole, inp, out, args


def test_predict_on_a_cut_gz_exits_1_keeps_records_and_resumes_when_whole(tmp_path, ner_model):
    whole, inp, out, args = _cut_input(tmp_path, ner_model)
    res = runner.invoke(app, args)
    said = " ".join(res.output.split())
    assert res.exit_code == 1 and "Aborted" not in said, res.output
    kept = part_path(out).read_text(encoding="utf-8").splitlines()
    reached = len(kept) + 1
    assert f"{inp}:{reached}: the gzip data ends before its end-of-stream marker" in said
    assert "EOFError" in said and f"the {len(kept)} records before it are written" in said
    assert len(kept) > 16 and len(kept) % 16 and [json.loads(x)["line"] for x in kept] == list(range(1, reached))
    assert load_state(state_path(out))["cut_off"]["line"] == reached
    # the same cut file again: the same error, nothing lost
    res = runner.invoke(app, [*args, "--resume"])
    assert res.exit_code == 1 and part_path(out).read_text(encoding="utf-8").splitlines() == kept
    # the download finished: --resume continues after the kept records
    inp.write_bytes(whole)
    res = runner.invoke(app, [*args, "--resume"])
    assert res.exit_code == 0, res.output
    fresh = tmp_path / "fresh.jsonl"
    res = runner.invoke(app, [str(fresh) if a == str(out) else a for a in args])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == fresh.read_bytes()
    assert len(out.read_text(encoding="utf-8").splitlines()) == 400


def test_resume_refuses_another_file_after_a_cut(tmp_path, ner_model):
    _, inp, out, args = _cut_input(tmp_path, ner_model)
    assert runner.invoke(app, args).exit_code == 1
    inp.write_bytes(gzip.compress(b"other text\n" * 500, mtime=0))  # longer, another beginning
    res = runner.invoke(app, [*args, "--resume"])
    assert res.exit_code == 1 and "cannot resume" in " ".join(res.output.split())
