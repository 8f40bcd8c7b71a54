"""The bounds on what one run may ask for, shared by scenario files and the command line.

Every value is checked when it is read, so an input past a bound is one line and exit 2 before
anything starts, never a machine run out of memory or an overflow deep in a run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime, timedelta

from harness.errors import UserError

MAX_REPLICAS = 64  # a scenario file's `replicas` and `run --replicas`
MAX_TICKS = 100_000  # replicas × ticks each, over the whole run
MAX_FILE_BYTES = 64 * 1024  # a scenario file; the lab's own are under 2 KiB
MAX_DEPTH = 8  # tables and lists inside one another in a scenario file (the lab's use 3)
MAX_DURATION = timedelta(days=366)  # an interval, offset, skew or lock_turn, either sign
YEARS = (1970, 2100)  # a start, end or fault time falls in these years, both included
MAX_SAMPLES = 100_000  # explore's sampled schedules (--walks, --runs)


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `low` (and at most `high`), or one line."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if high is not None and not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low} to "
                                             f"{high}")
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {low}")
        return value
    return parse


def replicas(value: object, what: str) -> int:
    """A replica count from 1 to MAX_REPLICAS, or UserError naming `what`."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_REPLICAS:
        raise UserError(f"{what}: {value!r} is not a whole number from 1 to {MAX_REPLICAS}")
    return value


def duration(seconds: float, text: str) -> timedelta:
    """`seconds` as a timedelta within ±MAX_DURATION, or ValueError quoting `text`."""
    if not abs(seconds) <= MAX_DURATION.total_seconds():
        raise ValueError(f"{text!r} is longer than {MAX_DURATION.days} days")
    return timedelta(seconds=seconds)


def year(value: datetime, text: object) -> datetime:
    """`value` when its year is in YEARS, else ValueError quoting `text`."""
    if not YEARS[0] <= value.year <= YEARS[1]:
        raise ValueError(f"{text!r} is not in the years {YEARS[0]} to {YEARS[1]}")
    return value


def ticks(replicas: int, start: datetime, end: datetime, interval: timedelta) -> int:
    """How many ticks a run of these replicas plays at most; UserError past MAX_TICKS."""
    each = int((end - start) / interval) + 1
    total = replicas * each
    if total > MAX_TICKS:
        raise UserError(f"{replicas} replicas ticking every {interval.total_seconds():g}s "
                        f"from start to end make {total:,} ticks; a run plays at most "
                        f"{MAX_TICKS:,} (a longer interval, a shorter run or fewer replicas)")
    return total


def depth(value: object) -> int:
    """How deep lists and tables sit inside one another in a parsed file (a scalar is 0)."""
    level, todo = 0, [(value, 0)]
    while todo:
        item, d = todo.pop()
        level = max(level, d)
        if isinstance(item, dict):
            todo += [(v, d + 1) for v in item.values()]
        elif isinstance(item, list):
            todo += [(v, d + 1) for v in item]
    return level
