"""What people look at: rich tables for a run and for the matrix, and the run's timeline.

Tables are built by pure functions; the CLI renders them. Colours are declared once here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import replace

from rich.table import Table
from rich.text import Text

from harness.engine.model import assumptions, axes, registry
from harness.engine.model.axes import Settings
from harness.engine.model.clock import offset_label
from harness.engine.model.history import ABORTS, Event
from harness.engine.model.result import RunResult
from harness.engine.model.scenario import canonical, format_duration

BAD = "bold red"
GOOD = "green"
WARN = "yellow"
DIM = "dim"

def count(n: int, bad_if_positive: bool = True) -> Text:
    style = (BAD if bad_if_positive else WARN) if n else GOOD
    return Text(str(n), style=style)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def run_title(result: RunResult) -> str:
    """A run table's title: stage, scenario, how many replicas, the seed."""
    s = result.scenario
    settings = "".join(f" · {axes.label(axis, value)}" for axis, value in result.settings)
    return (f"{result.stage.name} · {s.name}{settings} · {plural(s.replicas, 'replica')} · "
            f"seed {s.seed}")


def where_replicas_tick(result: RunResult) -> str:
    """Each replica's first tick, as an offset from the start, and the interval after it."""
    s = result.scenario
    ticks = " · ".join(f"{name} {offset_label(s.start + offset, s.start)}"
                       for name, offset in zip(s.replica_names, s.offsets, strict=True))
    return f"replicas tick every {format_duration(s.interval)} from {s.start:%a %H:%M:%S}: {ticks}"


def run_table(result: RunResult) -> Table:
    """The run's table, as its track draws it; a run that is a matrix cell whose number rests
    on a choice of the lab's carries the cell's marks after its title, and under its caption
    one line per mark saying what that choice does to this run (as the JSON's `marks`)."""
    table = registry.track(result.stage.track).report.run_table(result)
    cell = cell_marks(result)
    if cell:
        table.title = f"{table.title}{assumptions.signs(cell)}"
        above = [str(table.caption)] if table.caption else []
        table.caption = "\n".join([*above, *assumptions.explained(cell)])
    if result.aborted:
        above = [str(table.caption)] if table.caption else []
        table.caption = "\n".join([*above, aborted_words(result)])
    return table


def aborted_words(result: RunResult) -> str:
    """'PostgreSQL aborted 2 transactions (40001 serialization failure), not retried: …'."""
    codes = [e.data["sqlstate"] for e in result.events if e.event == "refused"]
    kinds = ", ".join(f"{c} {ABORTS[c]}" + (f" × {codes.count(c)}" if codes.count(c) > 1
                                            else "") for c in dict.fromkeys(codes))
    given_up = result.not_retried
    retried = (f"{given_up} not retried (the tick ended with the error)" if given_up else "")
    again = len(codes) - given_up
    return ("PostgreSQL aborted " + plural(len(codes), "transaction") + f" ({kinds}): "
            + ", ".join(filter(None, [f"{again} retried by the stage's code" if again else "",
                                      retried])))


def cell(result: RunResult) -> Text:
    """One matrix cell, as the run's track draws it."""
    return registry.track(result.stage.track).report.cell(result)


def cell_marks(result: RunResult) -> list[assumptions.Mark]:
    """What the cell's number assumes, as its track declares it
    (harness.engine.model.assumptions)."""
    return result.marks


def marked_cell(result: RunResult) -> Text:
    """A matrix cell with its marks: '3 †' where the 3 rests on the forced overlap."""
    text = cell(result)
    if result.aborted:  # PostgreSQL's refusals: the count is of what landed without them
        text.append(f" ({result.aborted} aborted)", style=WARN)
    text.append(assumptions.signs(cell_marks(result)), style=DIM)
    return text


ABORTED = ("(N aborted): N transactions PostgreSQL aborted (serialization failure 40001, or "
           "deadlock 40P01); the stages do not retry them")


def legend(results: Iterable[RunResult]) -> list[str]:
    """The legend lines under a matrix: one per kind of mark its cells carry, and what
    '(N aborted)' means where a cell says it."""
    results = list(results)
    return [*assumptions.legend([cell_marks(r) for r in results]),
            *([ABORTED] if any(r.aborted for r in results) else [])]


def columns(results: list[RunResult]) -> list[tuple[str, Settings]]:
    """A matrix's columns: its scenarios in the canonical order, even when the first stage
    lacks some (a "—" there), each once per value of the run axes, in the cells' order."""
    track = results[0].scenario.track if results else None  # a matrix is of one track
    order = {scenario.name: i for i, scenario in enumerate(canonical(track))}
    return sorted(dict.fromkeys(r.column for r in results),
                  key=lambda column: order.get(column[0], len(order)))


def varied(columns: list[tuple[str, Settings]]) -> set[str]:
    """The run axes a matrix's headers name: each with no default, and each with one that some
    column has at another value (at its default in every column, it goes unsaid, as before
    there were axes: the caption says it)."""
    return {axis for _, settings in columns for axis, value in settings
            if value != axes.default(registry.axes()[axis])}


def header(column: tuple[str, Settings], sep: str = "\n", shown: set[str] | None = None
           ) -> str:
    """A column's header: its scenario, then each run axis's value in `shown` (default every
    one), on lines of their own."""
    name, settings = column
    return sep.join([name, *(axes.label(axis, value) for axis, value in settings
                             if shown is None or axis in shown)])


def unsaid(results: list[RunResult]) -> str:
    """The words for the run axes at their default in every cell, for a matrix's title ("" if
    none): 'every cell at read committed'."""
    cols = columns(results)
    shown = varied(cols)
    same = dict(s for _, settings in cols for s in settings if s[0] not in shown)
    return "every cell at " + ", ".join(axes.label(a, v) for a, v in same.items()) if same else ""


def matrix_title(results: list[RunResult], title: str) -> str:
    """`title`, then the run axes' values every cell shares (the headers name the others)."""
    return " · ".join(filter(None, [title, unsaid(results)]))


def matrix_table(results: Iterable[RunResult], title: str) -> Table:
    results = list(results)
    scenarios = columns(results)
    stages = list(dict.fromkeys(r.stage.name for r in results))
    caption = registry.track(results[0].stage.track).report.MATRIX_CAPTION if results else ""
    caption = "\n".join([caption, *legend(results)])
    shown = varied(scenarios)
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("stage", no_wrap=True)
    for name in scenarios:
        table.add_column(header(name, shown=shown), justify="right")
    by_key = {(r.stage.name, r.column): r for r in results}
    for stage in stages:
        row: list[Text | str] = [stage]
        for name in scenarios:
            r = by_key.get((stage, name))
            row.append(marked_cell(r) if r else Text("—", style=DIM))
        table.add_row(*row)
    return table


def _describe(e: Event, labels: dict[str, str]) -> str:
    if e.event in ("lock", "claim", "sentinel"):
        return f"{labels.get(e.event, e.event)} → {e.detail}"
    if e.event == "write":
        parts = []
        for chunk in e.detail.split(", "):
            n, _, table = chunk.partition(" ")
            label = labels.get(table, table)
            parts.append(f"{n} {label}{'s' if n != '1' and not label.endswith('closed') else ''}")
        return "wrote " + ", ".join(parts)
    if e.event in ("commit", "rollback"):
        return f"{e.event.upper()} ({e.detail})" if e.detail else e.event.upper()
    if e.event == "commit-failed":
        return f"COMMIT failed: {e.detail}"
    if e.event == "refused":
        return e.detail
    if e.event == "held":
        return f"held {e.detail}"
    if e.event in ("log", "decision"):
        return e.detail
    return f"{e.event}: {e.detail}" if e.detail else e.event


_STYLE = {"error": BAD, "commit-failed": BAD, "fault": WARN, "barrier": WARN, "blocked": WARN,
          "rollback": WARN, "commit": GOOD, "held": DIM}


_DIGITS = re.compile(r"\d+")
COLLAPSE_AT = 3  # this many like events in a row become one: "first … last (N in all)"


def collapse(events: list[Event]) -> list[Event]:
    """Fold runs of events that differ only in their numbers (600 'alert sent: stuck_job:…'),
    or of pairs that do (a decision and its log line, 600 times), into one event (or pair):
    "first … last (N in all)", so a timeline stays one line per tick."""
    out: list[Event] = []
    i = 0
    while i < len(events):
        for width in (1, 2):
            unit = events[i:i + width]
            if len(unit) < width or any(e.event in ("tick", "task") for e in unit) or (
                    width == 2 and _shape(unit[0]) == _shape(unit[1])):
                continue
            n = 1
            while all(i + n * width + k < len(events)
                      and _shape(events[i + n * width + k]) == _shape(unit[k])
                      for k in range(width)):
                n += 1
            if n >= COLLAPSE_AT:
                out += [_fold(events[i + k:i + n * width:width]) for k in range(width)]
                i += n * width
                break
        else:
            out.append(events[i])
            i += 1
    return out


def _shape(e: Event) -> tuple:
    return (e.t, e.replica, e.event, _DIGITS.sub("#", e.detail))


def _fold(run: list[Event]) -> Event:
    first, last = run[0].detail, run[-1].detail
    common = os.path.commonprefix([first, last])
    cut = max((i + 1 for i, c in enumerate(common) if not c.isalnum()), default=0)
    return replace(run[0], detail=f"{first} … {last[cut:]} ({len(run)} in all)")


TIMELINE_INDENT = 34  # where a timeline line's text starts: offset, clock time, process


def timeline(result: RunResult) -> list[Text]:
    """One line per replica tick (and per fault): virtual time, replica, what happened."""
    origin = result.scenario.start
    replicas = set(result.scenario.replica_names)
    labels = registry.track(result.stage.track).report.LABELS
    lines: list[Text] = []
    current: tuple | None = None
    line = Text()
    for e in collapse(result.events):
        key = (e.t, e.replica, e.event if e.replica == "harness" else "")
        if e.event in ("tick", "task") or key != current:
            if line:
                lines.append(line)
            current = key
            line = Text()
            line.append(f"{offset_label(e.t, origin):>9} ", style=DIM)
            line.append(f"{e.t:%a %H:%M:%S} ", style=DIM)
            # replicas by letter; the harness, the scheduler and its tasks by their own names
            who = f"replica {e.replica}" if e.replica in replicas else e.replica
            line.append(f"{who:<10}", style="bold")
            if e.event in ("tick", "task"):
                outcome_style = {"ok": GOOD, "failed": BAD}.get(e.outcome, WARN)
                line.append(f" {e.event} [{e.outcome}]", style=outcome_style)
                if e.detail:
                    line.append(f" ({e.detail})", style=DIM)
                continue
            line.append(" ")
        else:
            line.append(" · ", style=DIM)
        line.append(_describe(e, labels), style=_STYLE.get(e.event, ""))
    if line:
        lines.append(line)
    return lines
