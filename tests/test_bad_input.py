"""The bad-input suite: every command fed the malformed files users bring.

Each case asserts a clear message (naming the file, and the line where there is one), exit code
1, no traceback, and no partial output left behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from tests.conftest import TRAIN, write_ner_dir

runner = CliRunner()


def run_cli(*args: str):
    res = runner.invoke(app, [str(a) for a in args])
    text = " ".join(res.output.split())
    return res, text


def assert_refused(res, text: str, *needles: str) -> None:
    assert res.exit_code == 1, text
    assert "Traceback" not in text and "error:" in text, text
    for needle in needles:
        assert needle in text, (needle, text)


# --------------------------------------------------------------------------- NER (CoNLL files)

NER_CASES = {
    "empty train file": ("", "train.tsv", "no sentences"),
    "latin-1 bytes": ("Caf\xe9\tO\n".encode("latin-1"), "train.tsv:1", "UTF-8"),
    "one column": ("Aspirin\tB-Chemical\ninduced\n", "train.tsv:2", "only one column"),
    "unknown scheme": ("Aspirin\tX-Chemical\n", "train.tsv:1", "tag"),
    "I- without type": ("Aspirin\tI-\n", "train.tsv:1", "type"),
}


@pytest.mark.parametrize("case", sorted(NER_CASES))
def test_ner_bad_train_file(tmp_path, tiny_encoder, case):
    content, where, what = NER_CASES[case]
    data = write_ner_dir(tmp_path / "d")
    target = data / "train.tsv"
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    out = tmp_path / "run"
    res, text = run_cli("finetune", "ner", "--data", data, "--model", tiny_encoder, "-o", out)
    assert_refused(res, text, where, what)
    assert not out.exists()


def test_ner_crlf_and_bom_are_accepted(tmp_path, tiny_encoder):
    data = write_ner_dir(tmp_path / "d")
    (data / "train.tsv").write_bytes(b"\xef\xbb\xbf" + TRAIN.replace("\n", "\r\n").encode())
    out = tmp_path / "run"
    res, text = run_cli("finetune", "ner", "--data", data, "--model", tiny_encoder, "-o", out,
                        "--epochs", "1")
    assert res.exit_code == 0, text
    assert (out / "results.json").is_file()


def test_ner_missing_split_and_missing_paths(tmp_path, tiny_encoder):
    data = write_ner_dir(tmp_path / "d")
    (data / "dev.tsv").unlink()
    out = tmp_path / "run"
    res, text = run_cli("finetune", "ner", "--data", data, "--model", tiny_encoder, "-o", out)
    assert_refused(res, text, "dev")
    assert not out.exists()
    res, text = run_cli("finetune", "ner", "--data", tmp_path / "nowhere", "--model", tiny_encoder,
                        "-o", out)
    assert_refused(res, text, "nowhere")
    res, text = run_cli("finetune", "ner", "--data", write_ner_dir(tmp_path / "d2"), "--model",
                        tmp_path / "no-model", "-o", out)
    assert_refused(res, text, "no-model")
    assert not out.exists()


def test_ner_output_dir_holding_another_run_is_left_untouched(tmp_path, tiny_encoder):
    data = write_ner_dir(tmp_path / "d")
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text('{"precious": true}')
    res, text = run_cli("finetune", "ner", "--data", data, "--model", tiny_encoder, "-o", out)
    assert_refused(res, text, "already holds a run", "--overwrite")
    assert (out / "results.json").read_text() == '{"precious": true}'
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]


def test_ner_predict_bad_inputs(tmp_path, tiny_encoder):
    (tmp_path / "x.txt").write_text("Aspirin .\n")  # an input that exists, a model that does not
    res, text = run_cli("predict", "ner", "--model", tmp_path / "no-run", "--input",
                        tmp_path / "x.txt")
    assert_refused(res, text, "no-run")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    res, text = run_cli("evaluate", "ner", "--model", tiny_encoder, "--data",
                        write_ner_dir(tmp_path / "d"))
    assert_refused(res, text)


# --------------------------------------------------------------------------- recipes and plots

def test_recipe_and_plot_bad_inputs(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text("command: finetune ner\nsettings:\n  epochs: two\n")
    out = tmp_path / "run"
    res, text = run_cli("run", bad, "-o", out)
    assert_refused(res, text, "epochs", "integer")
    assert not out.exists()
    bad.write_bytes(b"\xff\xfe\x00garbage")
    res, text = run_cli("run", bad, "-o", out)
    assert_refused(res, text, str(bad))
    res, text = run_cli("plot", tmp_path / "no-run")
    assert_refused(res, text, "no metrics.jsonl")


def test_vocab_build_bad_inputs(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    out = tmp_path / "v"
    res, text = run_cli("vocab", "build", "--corpus", empty, "--out", out)
    assert_refused(res, text, "empty")
    binary = tmp_path / "bin.txt"
    binary.write_bytes(bytes(range(256)) * 4)
    res, text = run_cli("vocab", "build", "--corpus", binary, "--out", out)
    assert_refused(res, text, "bin.txt")
    res, text = run_cli("vocab", "build", "--corpus", tmp_path / "none.txt", "--out", out)
    assert_refused(res, text, "none.txt")
    assert not Path(out).exists()
