"""A tiny CoNLL-2012 coreference data set (train/dev/test) for the coref task tests."""

from pathlib import Path

import pytest

_SENTS = [
    ("Anna met her brother in Paris .", "(0) - (1|(0) 1) - (2) -"),
    ("She smiled and he waved .", "(0) - - (1) - -"),
    ("The old city was quiet .", "(2 - 2) - - -"),
    ("Tom saw the dog .", "(3) - (4 4) -"),
    ("It barked at him .", "(4) - - (3) -"),
]


def document(name: str, sents=_SENTS) -> str:
    lines = [f"#begin document ({name}); part 0"]
    for words, tags in sents:
        for k, (w, t) in enumerate(zip(words.split(), tags.split(), strict=True)):
            lines.append(f"{name}\t0\t{k}\t{w}\t_\t{'' if t == '-' else t}")
        lines.append("")
    lines.append("#end document")
    return "\n".join(lines) + "\n"


def write_coref_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.conll").write_text(document("a") + document("b", _SENTS[::-1]) +
                                      document("c", _SENTS[1:]), encoding="utf-8")
    (root / "dev").mkdir(exist_ok=True)  # a folder of one-document files, as LitBank
    (root / "dev" / "d.conll").write_text(document("d", _SENTS[:3]), encoding="utf-8")
    (root / "dev" / "e.conll").write_text(document("e", _SENTS[2:]), encoding="utf-8")
    (root / "test.conll").write_text(document("f") + document("g", _SENTS[1:4]), encoding="utf-8")
    return root


@pytest.fixture
def coref_dir(tmp_path: Path) -> Path:
    return write_coref_dir(tmp_path / "coref")
