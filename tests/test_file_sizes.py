"""Files stay small (the developers' guide: a reader finds any piece from folder names, and no
module of bertkit/ grows past 450 lines)."""

from pathlib import Path

LIMIT = 450
ROOT = Path(__file__).resolve().parents[1] / "bertkit"


def test_no_bertkit_module_over_the_limit():
    sizes = {str(p.relative_to(ROOT.parent)): len(p.read_text(encoding="utf-8").splitlines())
             for p in ROOT.rglob("*.py")}
    assert len(sizes) > 100  # the walk found the package
    assert {k: n for k, n in sizes.items() if n > LIMIT} == {}
