"""A saved NER model with a tiny random encoder (no training), and inputs to stream."""

from __future__ import annotations

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
