"""Tiny relation data for the RE task tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PAIRS = [
    ("<< aspirin >> inhibits [[ cox-1 ]] in platelets .", "INHIBITOR"),
    ("<< ibuprofen >> is a substrate of [[ cyp2c9 ]] .", "SUBSTRATE"),
    ("[[ egfr ]] is blocked by << gefitinib >> .", "INHIBITOR"),
    ("<< dopamine >> activates [[ d1 receptor ]] signalling .", "ACTIVATOR"),
    ("<< caffeine >> is metabolised by [[ cyp1a2 ]] .", "SUBSTRATE"),
    ("<< morphine >> activates the [[ mu opioid receptor ]] .", "ACTIVATOR"),
]


def write_re_dir(root: Path, train=PAIRS, dev=PAIRS, test=PAIRS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, pairs in (("train", train), ("dev", dev), ("test", test)):
        (root / f"{name}.jsonl").write_text(
            "".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in pairs), encoding="utf-8")
    return root


@pytest.fixture
def re_dir(tmp_path: Path) -> Path:
    return write_re_dir(tmp_path / "re-data")
