"""A tiny CoNLL-U data set (train/dev/test) for the dependency parser tests."""

from pathlib import Path

import pytest

SENTS = [
    "# sent_id = a\n# text = Cells express IL-2 .\n"
    "1\tCells\tcell\tNNS\tNNS\t_\t2\tnsubj\t_\t_\n2\texpress\texpress\tVBP\tVBP\t_\t0\troot\t_\t_\n"
    "3\tIL-2\til-2\tNN\tNN\t_\t2\tdobj\t_\t_\n4\t.\t.\t.\t.\t_\t2\tpunct\t_\t_\n",
    "# sent_id = b\n"
    "1\tT\tt\tNN\tNN\t_\t2\tcompound\t_\t_\n2\tcells\tcell\tNNS\tNNS\t_\t3\tnsubj\t_\t_\n"
    "3\tproliferate\tproliferate\tVBP\tVBP\t_\t0\troot\t_\t_\n4\t.\t.\t.\t.\t_\t3\tpunct\t_\t_\n",
    "# sent_id = c\n"
    "1\tWe\twe\tPRP\tPRP\t_\t2\tnsubj\t_\t_\n2\tfound\tfind\tVBD\tVBD\t_\t0\troot\t_\t_\n"
    "3-4\tnf-kb\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\tnf\tnf\tNN\tNN\t_\t4\tcompound\t_\t_\n4\tkb\tkb\tNN\tNN\t_\t2\tdobj\t_\t_\n"
    "4.1\tit\t_\t_\t_\t_\t_\t_\t2:obj\t_\n5\t.\t.\t.\t.\t_\t2\tpunct\t_\t_\n",
]
TEXT = "\n".join(SENTS) + "\n"


def write_dep_dir(root: Path, train: str = TEXT, dev: str = TEXT, test: str | None = TEXT) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (("train", train), ("dev", dev), ("test", test)):
        if text is not None:
            (root / f"{name}.conllu").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def dep_dir(tmp_path: Path) -> Path:
    return write_dep_dir(tmp_path / "dep")
