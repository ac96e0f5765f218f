"""The state file costs the same at every chunk (chunk ranges and skipped lines go to its
append-only log), and a resume still refuses another input."""

from __future__ import annotations

import pytest

from bertkit.errors import BertkitError
from bertkit.predict import StreamOptions, StreamPredictor, stream_predict
from bertkit.predict import driver
from bertkit.predict.state import load_state, log_path, state_path


def _upper(model: str) -> StreamPredictor:
    return StreamPredictor("text", lambda recs: [r.text.upper() + "\n" for r in recs], model)


def test_state_file_size_does_not_grow_with_chunks(tmp_path, monkeypatch):
    inp = tmp_path / "in.txt"
    inp.write_bytes(b"".join(b"caf\xe9\n" if i % 50 == 7 else f"line {i}\n".encode()
                             for i in range(300)))
    sizes, real = [], driver.save_state

    def save(path, state):
        real(path, state)
        sizes.append(path.stat().st_size)

    monkeypatch.setattr(driver, "save_state", save)
    out = tmp_path / "out.txt.shard-1-of-1"
    stream_predict(_upper(str(tmp_path)), str(inp), out,
                   StreamOptions(chunk_size=2, shard=(1, 1), skip_bad_lines=True))
    assert len(sizes) == 151  # 150 chunks, then "complete"
    # the counts' digits may grow by a few bytes; a list of chunks would add ~15 bytes a chunk
    assert max(sizes) - sizes[0] < 40, (sizes[0], max(sizes))
    state = load_state(state_path(out))
    assert [c for c, _, _ in state["chunks"]] == list(range(150))
    assert [line for line, _ in state["skipped"]] == [8, 58, 108, 158, 208, 258]
    assert state["log_offset"] == log_path(state_path(out)).stat().st_size


def test_resume_cuts_the_log_back_and_refuses_another_input(tmp_path):
    inp = tmp_path / "in.txt"
    inp.write_text("".join(f"line {i}\n" for i in range(40)))
    whole = tmp_path / "whole.txt"
    stream_predict(_upper(str(tmp_path)), str(inp), whole, StreamOptions(chunk_size=5))
    out = tmp_path / "out.txt"
    calls = [0]

    def crash(recs):
        calls[0] += 1
        if calls[0] > 3:
            raise KeyboardInterrupt
        return [r.text.upper() + "\n" for r in recs]

    with pytest.raises(BertkitError, match="stopped"):
        stream_predict(StreamPredictor("text", crash, str(tmp_path)), str(inp), out,
                       StreamOptions(chunk_size=5))
    state = load_state(state_path(out))
    assert state["records"] == 15
    with open(log_path(state_path(out)), "ab") as f:  # a log line written, its state not
        f.write(b'{"skipped": [99, "never"]}\n')
    other = tmp_path / "other.txt"
    other.write_text("another input\n")
    with pytest.raises(BertkitError, match="another input"):
        stream_predict(_upper(str(tmp_path)), str(other), out,
                       StreamOptions(chunk_size=5, resume=True))
    summary = stream_predict(_upper(str(tmp_path)), str(inp), out,
                             StreamOptions(chunk_size=5, resume=True))
    assert out.read_bytes() == whole.read_bytes() and summary.skipped == []
    assert not state_path(out).exists() and not log_path(state_path(out)).exists()
