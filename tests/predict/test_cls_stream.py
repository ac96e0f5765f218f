"""``predict cls`` through the streaming driver: bad JSON lines, skip records, shards, CSV."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app

runner = CliRunner()
FAST = ["--epochs", "1", "--batch-size", "4", "--lr", "1e-3", "--device", "cpu",
        "--max-length", "24"]


@pytest.fixture(scope="module")
def cls_run(tmp_path_factory, tiny_encoder):
    tmp = tmp_path_factory.mktemp("cls")
    d = tmp / "d"
    d.mkdir()
    for split in ("train", "dev", "test"):
        (d / f"{split}.jsonl").write_text("".join(
            json.dumps({"text": f"{split} sentence {i} about topic {i % 3} .",
                        "label": "ab"[i % 2]}) + "\n" for i in range(8)), encoding="utf-8")
    res = runner.invoke(app, ["finetune", "cls", "--data", str(d), "-m", tiny_encoder, "-o",
                              str(tmp / "run"), *FAST])
    assert res.exit_code == 0, res.output
    return tmp / "run"


def _input(path, n=23):
    rows = [json.dumps({"id": i, "text": f"text {i} with {'more words ' * (i % 5)}."})
            for i in range(n)]
    rows[9] = '{"id": 9, "text": '           # does not parse
    rows[14] = '{"id": 14, "body": "x"}'       # no text field
    rows[17] = ""                              # blank: no record, as ever
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _predict(run, inp, *args):
    return runner.invoke(app, ["predict", "cls", "-m", str(run), "-i", str(inp), "--device",
                               "cpu", *map(str, args)])


def test_cls_streams_with_bad_lines_shards_and_merge(tmp_path, cls_run):
    inp = _input(tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    res = _predict(cls_run, inp, "-o", out, "--chunk-size", "4")
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and f"{inp}:10: not JSON:" in text and "9 records before" in text
    res = _predict(cls_run, inp, "-o", out, "--chunk-size", "4", "--resume", "--skip-bad-lines")
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in rows] == [n for n in range(1, 24) if n != 18]
    assert rows[9]["skipped"].startswith("not JSON:")
    assert rows[14]["skipped"].startswith("no text field 'text'")
    assert all(r["predicted"] in ("a", "b") and r["id"] == r["line"] - 1
               for r in rows if "skipped" not in r)
    sharded = tmp_path / "sharded.jsonl"
    for i in (1, 2, 3):
        assert _predict(cls_run, inp, "-o", sharded, "--chunk-size", "4", "--skip-bad-lines",
                        "--shard", f"{i}/3").exit_code == 0
    assert runner.invoke(app, ["predict", "merge", str(sharded)]).exit_code == 0
    assert sharded.read_bytes() == out.read_bytes()
    res = _predict(cls_run, inp, "--skip-bad-lines")  # standard output, streamed
    assert res.exit_code == 0 and res.stdout == out.read_text(encoding="utf-8")


def test_csv_is_read_whole_and_refuses_streaming_options(tmp_path, cls_run):
    csv = tmp_path / "in.csv"
    csv.write_text('text\n"a text, quoted"\nanother\n', encoding="utf-8")
    res = _predict(cls_run, csv)
    assert res.exit_code == 0 and len([x for x in res.stdout.splitlines() if x]) == 2
    res = _predict(cls_run, csv, "-o", tmp_path / "o.jsonl", "--shard", "1/2")
    assert res.exit_code == 1 and "--shard: this input is read whole" in " ".join(res.output.split())
