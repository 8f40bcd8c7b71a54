"""The `racelab` command's first lines. Importing the CLI takes a few tenths of a second, and
until it installs its own handlers (harness.interrupts) a Ctrl-C would end it with Python's
traceback of whatever import it cut. Nothing exists yet then (no database, no process), so
such an interrupt ends the command at once with one line."""

from __future__ import annotations

import os
import signal
import sys


def main() -> int:
    signal.signal(signal.SIGINT, _before_start)
    signal.signal(signal.SIGTERM, _before_start)
    from harness.cli.main import main as cli_main

    return cli_main()


def _before_start(signum: int, frame: object) -> None:
    sys.stderr.write("racelab: interrupted before it started; nothing was made\n")
    sys.stderr.flush()
    os._exit(130)
