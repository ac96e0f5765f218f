"""Tiny sentence-classification data for the cls task tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TEXTS = [
    ("We use the parser of Collins ( 1997 ) to parse the corpus .", "Uses"),
    ("Parsing has a long history ( Church , 1988 ) .", "Background"),
    ("Our results agree with those of Smith et al. ( 2001 ) .", "CompareOrContrast"),
    ("We apply the tagger of Brill ( 1995 ) to every sentence .", "Uses"),
    ("Statistical methods have been widely studied ( Charniak , 1997 ) .", "Background"),
    ("Unlike Jones ( 2003 ) , we find no gain from lexicalisation .", "CompareOrContrast"),
]


def write_cls_dir(root: Path, train=TEXTS, dev=TEXTS, test=TEXTS, ext: str = "jsonl") -> Path:
    """train/dev/test files of (text, label) rows: JSON lines, or CSV/TSV with a header."""
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("dev", dev), ("test", test)):
        if ext == "jsonl":
            body = "".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in rows)
        else:
            import csv
            import io

            buf = io.StringIO()
            w = csv.writer(buf, delimiter="\t" if ext == "tsv" else ",", lineterminator="\n")
            w.writerow(["sentence", "intent"])
            w.writerows(rows)
            body = buf.getvalue()
        (root / f"{name}.{ext}").write_text(body, encoding="utf-8")
    return root


@pytest.fixture
def cls_dir(tmp_path: Path) -> Path:
    return write_cls_dir(tmp_path / "cls-data")
