"""The per-command reference in docs/cli/ is generated from the CLI: it must match the CLI now."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_pages_match_the_cli():
    gen = _generator()
    pages = gen.pages()
    # every command group has a page, and the finetune page documents a flag every task has
    assert {"finetune.md", "pretrain.md", "vocab.md", "README.md"} <= set(pages)
    assert "`--max-length`" in pages["finetune.md"]
    stale = [name for name, text in pages.items()
             if not (gen.DOCS / name).exists() or (gen.DOCS / name).read_text(encoding="utf-8") != text]
    assert not stale, f"docs/cli pages out of date: {stale}; run: python docs/generate.py"


def test_kind_of_an_option_comes_from_its_annotation():
    gen = _generator()
    page = gen.pages()["finetune.md"]
    assert "| `--precision` | auto \\| fp32 \\| bf16 \\| fp16 |" in page
    assert "| `--epochs` | integer |" in page
