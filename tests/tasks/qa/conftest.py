"""Tiny QA data (SQuAD JSON) for the qa task tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CONTEXT = ("Aspirin inhibits platelet aggregation. Cisplatin causes nephrotoxicity in rats. "
           "The trial enrolled 120 patients in 1998.")


def squad_doc(unanswerable: bool = False) -> dict:
    """One article, one paragraph, four questions (one with a space-padded answer)."""
    qas = [
        {"id": "q1", "question": "What does aspirin inhibit?",
         "answers": [{"text": "platelet aggregation", "answer_start": 17}]},
        {"id": "q2", "question": "What does cisplatin cause?",
         "answers": [{"text": " nephrotoxicity ", "answer_start": 55}]},
        {"id": "q3", "question": "How many patients were enrolled?",
         "answers": [{"text": "120", "answer_start": 99},
                     {"text": "120 patients", "answer_start": 99}]},
        {"id": "q4", "question": "When was the trial?",
         "answers": [{"text": "1998", "answer_start": 115}]},
    ]
    if unanswerable:
        qas.append({"id": "q5", "question": "Who funded the trial?", "answers": [],
                    "is_impossible": True})
    return {"version": "v2.0" if unanswerable else "1.1", "data": [{"title": "Drugs", "paragraphs": [
        {"context": CONTEXT, "qas": qas}]}]}


def write_qa_dir(root: Path, doc: dict | None = None, unanswerable: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    doc = doc or squad_doc(unanswerable)
    for name in ("train", "dev", "test"):
        (root / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    return root


@pytest.fixture
def qa_dir(tmp_path: Path) -> Path:
    return write_qa_dir(tmp_path / "qa")
