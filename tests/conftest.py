"""Shared fixtures: a tiny random BERT with the packaged WordPiece tokenizer, and tiny NER data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

TRAIN = """-DOCSTART-\tO

Aspirin\tB-Chemical
induced\tO
renal\tB-Disease
failure\tI-Disease
.\tO

Cisplatin\tB-Chemical
causes\tO
nephrotoxicity\tB-Disease
in\tO
rats\tO
.\tO

No\tO
entities\tO
here\tO
"""


HIDE_BERTKIT = r'''
import sys

class HideBertkit:
    def find_spec(self, name, path=None, target=None):
        if name == "bertkit" or name.startswith("bertkit."):
            raise ImportError("bertkit is hidden in this test")
        return None

sys.meta_path.insert(0, HideBertkit())
try:
    import bertkit  # noqa: F401
    sys.exit("bertkit is importable")
except ImportError:
    pass
'''
"""Python source that, run first in a fresh interpreter (``python -c``), makes ``import bertkit``
fail (the editable install would otherwise find it): for tests of code a saved model's card
promises runs without bertkit."""


def write_ner_dir(root: Path, train: str = TRAIN, dev: str = TRAIN, test: str = TRAIN) -> Path:
    """A data directory with train/dev/test.tsv."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (("train", train), ("dev", dev), ("test", test)):
        (root / f"{name}.tsv").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def ner_dir(tmp_path: Path) -> Path:
    return write_ner_dir(tmp_path / "data")


@pytest.fixture(scope="session")
def tokenizer():
    from bertkit.encoders import default_model, load_tokenizer

    return load_tokenizer(default_model())


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory, tokenizer) -> str:
    """Directory of a randomly initialised 2-layer, 32-wide BERT with MiniLM's uncased vocabulary."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-bert")
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="session")
def still_encoder(tmp_path_factory, tokenizer) -> str:
    """A tiny BERT without dropout, so one process and several compute the same thing."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("still-bert")
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("BERTKIT_DATA"):
        return
    skip = pytest.mark.skip(reason="BERTKIT_DATA is not set")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)
