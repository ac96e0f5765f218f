"""The ``bertkit`` console command: imports the CLI (torch, transformers: seconds on a busy
machine) under a Ctrl-C guard, so that an interrupt while starting up ends with a one-line
message and exit status 130, as an interrupt during training does, not with a traceback."""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of the ``bertkit`` console command and of ``python -m bertkit``.

    Raises:
        SystemExit: 130 on Ctrl-C (SIGINT) outside a training loop (which saves a checkpoint and
            stops with its own message); otherwise the command's own exit status.
    """
    try:
        from bertkit.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        print("bertkit: interrupted (Ctrl-C)", file=sys.stderr)
        raise SystemExit(130) from None
