"""How the CLI writes. On a terminal: rich, in colour, wrapped to the window. On a pipe or in a
file: plain lines, never wrapped, so each timeline event is one line for grep; a reader that
leaves early (`racelab … | head`) ends the command quietly with exit code 0."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console

from harness.writes import Target

PIPE_WIDTH = 320  # tables on a pipe: their natural width, never wrapped (rich would use 80)


class Output(Console):
    def print(self, *objects: Any, **kwargs: Any) -> None:
        kwargs.setdefault("soft_wrap", not self.is_terminal)  # soft wrap: no wrapping at all
        super().print(*objects, **kwargs)

    def on_broken_pipe(self) -> None:
        """rich exits with code 1 here; the CLI turns a reader leaving into a quiet exit 0."""
        self.quiet = True
        raise BrokenPipeError


def console(svg: str | None = None) -> Output:
    out = Output(record=bool(svg), highlight=False)
    if not out.is_terminal and not os.environ.get("COLUMNS"):
        out.width = PIPE_WIDTH
    return out


def save(out: Console, svg: Target | None, title: str) -> None:
    """What the console recorded, as SVG, to a target checked before the work."""
    if svg:
        svg.write(out.export_svg(title=title))


def me() -> str:
    """racelab as the user ran it, for a command line to copy (`.venv/bin/racelab` from the
    checkout; `python -m harness.cli` counts as that too)."""
    argv0 = sys.argv[0]
    return argv0 if os.path.basename(argv0) == "racelab" else ".venv/bin/racelab"
