"""CoNLL output from plain text accounts for every input line: an empty line and a line skipped
with --skip-bad-lines are each a block of one comment line (``# line N: ...``)."""

from __future__ import annotations

from bertkit.predict import StreamOptions, stream_predict
from bertkit.predict.records import iter_records
from bertkit.tasks.ner.task import stream_ner

from tests.predict.conftest import text_input


def test_every_input_line_has_its_conll_block(tmp_path, ner_model):
    inp = text_input(tmp_path / "in.txt", 30, bad_at=17)  # blank lines 7, 14, 21, 28
    out = tmp_path / "out.conll"
    summary = stream_predict(stream_ner(ner_model, str(inp), "conll", device="cpu"), str(inp),
                             out, StreamOptions(chunk_size=4, skip_bad_lines=True))
    assert summary.skipped == [[17, "not valid UTF-8 at byte 3 of the line"]]
    blocks = out.read_text().rstrip("\n").split("\n\n")
    assert len(blocks) == 30  # one block a line: line-aligned outputs stay aligned
    marks = {i + 1: b for i, b in enumerate(blocks) if b.startswith("# line ")}
    assert marks == {7: "# line 7: empty", 14: "# line 14: empty", 21: "# line 21: empty",
                     28: "# line 28: empty",
                     17: "# line 17: skipped: not valid UTF-8 at byte 3 of the line"}
    words = inp.read_bytes().split(b"\n")
    for i, block in enumerate(blocks):
        if i + 1 not in marks:  # the tokens of line i + 1, in order
            assert " ".join(r.split("\t")[0] for r in block.split("\n")) == words[i].decode()
    # read back as CoNLL (predict ner on its own output), the marks are sentence boundaries
    sents = list(iter_records(out, "conll"))
    assert len(sents) == 25 and all(len(s.rows[0][1]) == 2 for s in sents)
