"""A saved NER model with a tiny random encoder (no training), a classifier fine-tuned for one
epoch on 8 texts, and inputs to stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ner_model(tmp_path_factory, tiny_encoder, tokenizer) -> str:
    import torch

    from bertkit.tasks.ner.model import build_tagger

    torch.manual_seed(1)
    tagger = build_tagger(tiny_encoder, ["O", "B-Chemical", "I-Chemical", "B-Disease",
                                         "I-Disease"], crf=False, label_all_subwords=False)
    path = tmp_path_factory.mktemp("ner-model")
    tagger.save(path, tokenizer, {"max_length": 64, "base_model": tiny_encoder, "data": "test"})
    return str(path)


@pytest.fixture(scope="module")
def cls_run(tmp_path_factory, tiny_encoder) -> Path:
    from typer.testing import CliRunner

    from bertkit.cli import app

    tmp = tmp_path_factory.mktemp("cls")
    d = tmp / "d"
    d.mkdir()
    for split in ("train", "dev", "test"):
        (d / f"{split}.jsonl").write_text("".join(
            json.dumps({"text": f"{split} sentence {i} about topic {i % 3} .",
                        "label": "ab"[i % 2]}) + "\n" for i in range(8)), encoding="utf-8")
    res = CliRunner().invoke(app, [
        "finetune", "cls", "--data", str(d), "-m", tiny_encoder, "-o", str(tmp / "run"),
        "--epochs", "1", "--batch-size", "4", "--lr", "1e-3", "--device", "cpu",
        "--max-length", "24"])
    assert res.exit_code == 0, res.output
    return tmp / "run"


WORDS = ("aspirin induced renal failure in rats treated with cisplatin and the kidney "
         "damage was severe").split()


def text_input(path: Path, n: int, bad_at: int | None = None) -> Path:
    """``n`` lines of 1-14 words, a blank line every 7th, a non-UTF-8 line at ``bad_at``."""
    lines = []
    for i in range(n):
        line = "" if i % 7 == 6 else " ".join(WORDS[(i * 3) % 5:(i * 3) % 5 + 1 + i % 14])
        lines.append(line.encode())
    if bad_at is not None:
        lines[bad_at - 1] = b"caf\xe9 au lait"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def crash_after(predictor, chunks: int, error: type[BaseException] = KeyboardInterrupt):
    """``predictor``, made to stop like a killed run (raising ``error``) on chunk ``chunks + 1``:
    the resume tests' stand-in for Ctrl-C or a crash part way through a file."""
    inner, calls = predictor.predict, [0]

    def crash(records):
        calls[0] += 1
        if calls[0] > chunks:
            raise error
        return inner(records)

    predictor.predict = crash
    return predictor
