"""Command-line interface. Importing the command modules registers their commands on the app."""

from __future__ import annotations

import os

from bertkit.cli._app import app
from bertkit.cli import finetune, evaluate, predict, vocab, run, pretrain  # noqa: F401,E402  (register commands)
from bertkit.cli import adapt  # noqa: F401,E402  (register `bertkit adapt`)
from bertkit.cli import bench  # noqa: F401,E402  (register `bertkit bench`)


def main() -> None:
    """Entry point of the ``bertkit`` console command and of ``python -m bertkit``."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    app(prog_name="bertkit")
