"""Every benchmark script imports and answers ``--help`` (a smoke test: a script broken by a change
of bertkit's API fails here, not months later when a figure is re-measured). Each script is
imported in this process (benchmarks/ on ``sys.path``, as when it runs) and its ``main()`` called
with ``--help``: argparse prints the usage and exits 0 before anything is read or trained."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


def test_the_scripts_are_found():
    assert len(SCRIPTS) > 20 and (BENCHMARKS / "_stock.py").is_file()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_imports_and_answers_help(script, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the __main__ guard keeps main() from running
    with pytest.raises(SystemExit) as done:
        module.main()
    assert done.value.code in (0, None)
    assert "usage:" in capsys.readouterr().out
