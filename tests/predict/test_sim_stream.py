"""``predict sim`` streams JSON lines: the same scores as the whole-file path, shards merge to the
unsharded output, a killed and resumed run gives the same bytes, a bad line's record."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.predict import StreamOptions, shard_output, stream_predict
from bertkit.predict.merge import merge_shards
from bertkit.tasks.sim.task import TASK, predict_sim

from tests.predict.conftest import crash_after

from tests.tasks.sim.conftest import PAIRS, write_sim_dir

runner = CliRunner()


@pytest.fixture(scope="module")
def sim_model(tmp_path_factory, tiny_encoder):
    root = tmp_path_factory.mktemp("sim-stream")
    data = write_sim_dir(root / "data")
    res = runner.invoke(app, ["finetune", "sim", "--data", str(data), "-m", tiny_encoder,
                              "-o", str(root / "run"), "--device", "cpu", "--epochs", "1",
                              "--batch-size", "4"])
    assert res.exit_code == 0, res.output
    return str(root / "run")


def test_sim_stream_whole_file_shards_resume_and_bad_lines(tmp_path, sim_model):
    inp = tmp_path / "in.jsonl"
    rows = [json.dumps({"text": PAIRS[i % 6][0], "text_pair": PAIRS[i % 6][1], "id": i})
            if i % 8 != 7 else "" for i in range(26)]
    inp.write_text("\n".join(rows) + "\n")
    pred = lambda: TASK.stream(sim_model, str(inp), device="cpu", batch_size=4)  # noqa: E731
    whole = tmp_path / "whole.jsonl"
    stream_predict(pred(), str(inp), whole, StreamOptions(chunk_size=5))
    assert whole.read_text() == predict_sim(sim_model, str(inp), device="cpu", batch_size=4)
    out = tmp_path / "out.jsonl"
    for i in (1, 2):
        stream_predict(pred(), str(inp), shard_output(out, (i, 2)),
                       StreamOptions(chunk_size=5, shard=(i, 2)))
    assert merge_shards(out)["chunks"] == 6 and out.read_bytes() == whole.read_bytes()
    resumed, p = tmp_path / "resumed.jsonl", pred()
    crash_after(p, 2)
    with pytest.raises(BertkitError, match="stopped"):
        stream_predict(p, str(inp), resumed, StreamOptions(chunk_size=5))
    stream_predict(pred(), str(inp), resumed, StreamOptions(chunk_size=5, resume=True))
    assert resumed.read_bytes() == whole.read_bytes()
    rows[3] = '{"text": "only one text"}'
    inp.write_text("\n".join(rows) + "\n")
    res = runner.invoke(app, ["predict", "sim", "-m", sim_model, "-i", str(inp), "--device",
                              "cpu", "--skip-bad-lines", "--chunk-size", "5"])
    assert res.exit_code == 0, res.output
    got = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert len(got) == 23 and got[3]["line"] == 4 and "skipped" in got[3]
    assert [g["id"] for g in got if "id" in g] == [i for i in range(26) if i % 8 != 7 and i != 3]
