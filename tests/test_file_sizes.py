"""Files stay small (the developers' guide: a reader finds any piece from folder names, and no
module of bertkit/ grows past 450 lines), and test files are named after what they test."""

import re
from pathlib import Path

LIMIT = 450
ROOT = Path(__file__).resolve().parents[1] / "bertkit"


def test_no_bertkit_module_over_the_limit():
    sizes = {str(p.relative_to(ROOT.parent)): len(p.read_text(encoding="utf-8").splitlines())
             for p in ROOT.rglob("*.py")}
    assert len(sizes) > 100  # the walk found the package
    assert {k: n for k, n in sizes.items() if n > LIMIT} == {}


def test_test_files_are_named_after_what_they_test():
    """A file named after an issue (``test_issue31_workflow.py``) says nothing of the behaviour
    it checks, and the next issue's tests land beside it (issue 66)."""
    tests = Path(__file__).resolve().parent
    named = sorted(str(p.relative_to(tests)) for p in tests.rglob("test_*.py")
                   if re.match(r"test_(issue|bug|pr)_?\d", p.name))
    assert len(list(tests.rglob("test_*.py"))) > 100 and named == []
