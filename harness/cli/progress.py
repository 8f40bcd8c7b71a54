"""A long run says so: a warning before one estimated past a few minutes, and on a terminal a
live bar (ticks done of total, the virtual time reached, the time left).

Nothing here writes to stdout unless it is a terminal: piped output and --json stay what they
were. The warning goes to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from harness.engine.model.scenario import Scenario
from harness.engine.run.cells import ticks

TICKS_PER_S = 150  # a cautious figure for a tick through the harness (racelab bench measures it)
WARN_AFTER_S = 180
SHOW_AFTER_TICKS = 200  # a canonical run ends before a bar would help


def warn_if_long(s: Scenario) -> None:
    total = ticks(s)
    if total / TICKS_PER_S > WARN_AFTER_S:
        minutes = total / TICKS_PER_S / 60
        print(f"racelab: {total:,} ticks; at about {TICKS_PER_S} ticks/s this run takes about "
              f"{minutes:,.0f} minutes (Ctrl-C stops it and cleans up)", file=sys.stderr)


@contextmanager
def live(s: Scenario, console: Console, show: bool
         ) -> Iterator[Callable[[int, datetime], None] | None]:
    """Yields what the fleet calls after each instant (ticks done, virtual time), or None."""
    total = ticks(s)
    if not (show and console.is_terminal and total >= SHOW_AFTER_TICKS):
        yield None
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("ticks · {task.fields[reached]}"), TimeRemainingColumn(),
                   console=console, transient=True)
    task = bar.add_task(f"{s.name}", total=total, reached="")
    with bar:
        yield lambda done, t: bar.update(task, completed=done,
                                         reached=f"virtual {t:%a %d %b %H:%M}")
